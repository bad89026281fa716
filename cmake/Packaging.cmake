# Debian packages of payretry, built by CPack from a configured tree:
#
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build
#   cd build && cpack -G DEB
#
# One package per install component (the components are named in the install
# rules of src/api, cli and sim):
#   libpayretry<SOVERSION>  runtime  the shared library (libpayretry.so.0.1.0 and its SONAME link)
#   libpayretry-dev         dev      headers, the libpayretry.so link, payretry.pc, CMake config files
#   payretry-cli            cli      the `payretry` command line and its man page payretry(1)
#   payretry-sim            sim      the provider simulator `payretry-sim` and payretry-sim(1)
# Every package carries /usr/share/doc/<package>/copyright (Apache-2.0) and a changelog.
# The packages install under /usr (CPack's DEB default prefix) with the
# library in CMAKE_INSTALL_LIBDIR: configure with -DCMAKE_INSTALL_PREFIX=/usr to
# get Debian's multiarch lib/<triplet> (GNUInstallDirs picks it only for /usr);
# with the default prefix the library goes to /usr/lib, which the loader,
# pkg-config and find_package search as well.

# Only the project itself is packaged: when python/ builds the core as a
# subdirectory (the wheel), none of this applies.
if(NOT PROJECT_IS_TOP_LEVEL)
  return()
endif()

# The man pages, from the programs' --help, in the cli and sim components.
include(${CMAKE_CURRENT_LIST_DIR}/ManPages.cmake)

set(CPACK_PACKAGE_NAME payretry)
set(CPACK_PACKAGE_VENDOR payretry)
set(CPACK_PACKAGE_CONTACT "payretry <dev@payretry.invalid>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
# Each package's description starts with its own synopsis line (below);
# this file keeps the DEB generator from putting the summary above it.
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_LIST_DIR}/PackagingDebDescriptions.cmake)
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
# Debian ships binaries stripped (debug info goes to separate -dbgsym packages).
set(CPACK_STRIP_FILES ON)

set(CPACK_GENERATOR DEB)
# `cpack --config CPackSourceConfig.cmake` (the package_source target): the
# checkout as a tarball, without build trees or git's files. The patterns are
# regular expressions that CMake writes as they are into CPackConfig.cmake,
# which cpack reads as CMake again: a backslash would need escaping twice (one
# escaped once made cpack warn "Invalid escape sequence" on every run), so the
# dot of .git is matched by a bracket expression instead.
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/" "/[.]git" "/__pycache__/")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)          # <name>_<version>-<release>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends from the ELF files' NEEDED entries (dpkg-shlibdeps), per package.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The library's own package: a shlibs file (so that packages built against it
# get `Depends: libpayretry0 (>= version)`), and postinst/postrm running ldconfig.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# payretry-cli links libpayretry.so.0 of this same build, in no installed
# package yet: without its folder in the build tree dpkg-shlibdeps fails on the
# CLI; the explicit Depends below names its package. (CPack reads plain
# values, not generator expressions: hence the target's folder.)
get_target_property(payretry_library_dir payretry LIBRARY_OUTPUT_DIRECTORY)
if(NOT payretry_library_dir)
  get_target_property(payretry_library_dir payretry BINARY_DIR)
endif()
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${payretry_library_dir})

set(payretry_deb_version "${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")
set(payretry_runtime_package libpayretry${PAYRETRY_SOVERSION})

# The -dev package: payretry.pc names libcurl, libcjson, libcrypto (and
# sqlite3, libpq when built in) in Requires.private, which pkg-config needs
# present even for a shared link; a static libpayretry.a needs them to link.
set(payretry_dev_depends "libcurl4-openssl-dev | libcurl-dev, libcjson-dev, libssl-dev")
if(PAYRETRY_WITH_SQLITE)
  string(APPEND payretry_dev_depends ", libsqlite3-dev")
endif()
if(PAYRETRY_WITH_POSTGRESQL)
  string(APPEND payretry_dev_depends ", libpq-dev")
endif()

set(CPACK_COMPONENTS_ALL dev)
if(BUILD_SHARED_LIBS)
  list(APPEND CPACK_COMPONENTS_ALL runtime)
  string(PREPEND payretry_dev_depends "${payretry_runtime_package} (= ${payretry_deb_version}), ")
endif()
if(PAYRETRY_BUILD_CLI)
  list(APPEND CPACK_COMPONENTS_ALL cli)
endif()
if(PAYRETRY_BUILD_SIM)
  list(APPEND CPACK_COMPONENTS_ALL sim)
endif()

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${payretry_runtime_package})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
  "safe retries for payment-provider REST POSTs - shared library\n\
libpayretry persists one idempotency key in a ledger before the first send,\n\
retries within bounds, reports UNKNOWN instead of failed and settles by lookup,\n\
so that a payment POST can be retried without charging twice.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libpayretry-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${payretry_dev_depends}")
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "safe retries for payment-provider REST POSTs - development files\n\
Headers (C and C++), the pkg-config file payretry.pc and the CMake package\n\
(find_package(payretry)) for building programs against libpayretry.")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME payretry-cli)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_CLI_DESCRIPTION
  "safe retries for payment-provider REST POSTs - command line\n\
The `payretry` command: submit, query and reconcile payments and inspect the\n\
ledger from the shell; `payretry demo` runs against a bundled simulator.")
if(BUILD_SHARED_LIBS)
  set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "${payretry_runtime_package} (= ${payretry_deb_version})")
endif()

set(CPACK_DEBIAN_SIM_PACKAGE_NAME payretry-sim)
set(CPACK_DEBIAN_SIM_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_SIM_DESCRIPTION
  "payment-provider simulator with injectable faults, for testing\n\
`payretry-sim` plays Stripe, Adyen, PayPal and other providers' payment APIs\n\
strictly, with injectable faults (lost responses, 5xx, timeouts), for testing\n\
payment clients without a provider sandbox.")

# /usr/share/doc/<package>/copyright and changelog.Debian.gz in every package
# (Debian policy 12.5 and 12.7): the licence is Apache-2.0, whose text every
# Debian system has in /usr/share/common-licenses. EXCLUDE_FROM_ALL: only
# CPack's per-component install takes these; a plain `cmake --install` does
# not litter the prefix with four copies.
set(payretry_deb_dir ${PROJECT_BINARY_DIR}/packaging/debian)
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/copyright.in ${payretry_deb_dir}/copyright @ONLY)
set(PAYRETRY_DEB_SOURCE payretry)
set(PAYRETRY_DEB_VERSION ${payretry_deb_version})
string(TIMESTAMP PAYRETRY_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)  # honours SOURCE_DATE_EPOCH
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in ${payretry_deb_dir}/changelog.Debian @ONLY)
file(ARCHIVE_CREATE OUTPUT ${payretry_deb_dir}/changelog.Debian.gz
  PATHS ${payretry_deb_dir}/changelog.Debian FORMAT raw COMPRESSION GZip COMPRESSION_LEVEL 9)
foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  string(TOUPPER ${component} component_upper)
  install(FILES ${payretry_deb_dir}/copyright ${payretry_deb_dir}/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${component_upper}_PACKAGE_NAME}
    COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()
# The loader's cache is refreshed by a dpkg trigger (Debian policy 8.1.1).
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/libpayretry.triggers
  ${payretry_deb_dir}/runtime/triggers COPYONLY)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${payretry_deb_dir}/runtime/triggers)

include(CPack)
