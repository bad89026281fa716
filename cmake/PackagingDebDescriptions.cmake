# Read by cpack (CPACK_PROJECT_CONFIG_FILE, set in Packaging.cmake) before it
# makes packages. The DEB generator writes CPACK_PACKAGE_DESCRIPTION_SUMMARY as
# the first line of every package's Description; each of payretry's packages
# has its own first line (its synopsis, per Debian policy 3.4.1), so none here.
if(CPACK_GENERATOR STREQUAL "DEB")
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
endif()
