# Man pages payretry(1) and payretry-sim(1), made at build time from the
# programs' own --help by cmake/help_to_man.cmake (payretry's with every
# command's help too), installed by `cmake --install` under
# share/man/man1 in the programs' components, so that the payretry-cli and
# payretry-sim Debian packages carry them. Included by cmake/Packaging.cmake,
# after the targets exist.
if(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(STATUS "man pages: not made (cross-compiled programs cannot print their --help here)")
  return()
endif()

set(payretry_man_dir ${PROJECT_BINARY_DIR}/man)
set(payretry_man_pages "")

# payretry_man_page(<target> <name> <component> <summary> <see also> [SUBCOMMANDS])
function(payretry_man_page target name component summary see_also)
  set(page ${payretry_man_dir}/${name}.1.gz)
  set(subcommands OFF)
  if("SUBCOMMANDS" IN_LIST ARGN)
    set(subcommands ON)
  endif()
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:${target}> -DNAME=${name}
            "-DSUMMARY=${summary}" -DVERSION=${PROJECT_VERSION} -DSEE_ALSO=${see_also}
            -DSUBCOMMANDS=${subcommands} -DOUTPUT=${page}
            -P ${PROJECT_SOURCE_DIR}/cmake/help_to_man.cmake
    DEPENDS ${target} ${PROJECT_SOURCE_DIR}/cmake/help_to_man.cmake
    COMMENT "Man page ${name}(1) from `${name} --help`"
    VERBATIM)
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
  set(payretry_man_pages ${payretry_man_pages} ${page} PARENT_SCOPE)
endfunction()

if(PAYRETRY_BUILD_CLI)
  payretry_man_page(payretry_cli payretry cli
    "submit, query and reconcile payments that are safe to retry" payretry-sim SUBCOMMANDS)
endif()
if(PAYRETRY_BUILD_SIM)
  payretry_man_page(payretry-sim payretry-sim sim
    "a local payment provider with injectable faults, for testing" payretry)
endif()
if(payretry_man_pages)
  add_custom_target(payretry_man_pages ALL DEPENDS ${payretry_man_pages})
endif()
