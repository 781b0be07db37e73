# `cmake --install build --prefix P` and `cpack -G DEB` (README "Install"): the trainrun binary,
# libtrainrun, the public headers (cmake/public_headers.txt), the recipes, and the CMake package
# that lets another project `find_package(trainrun)` and link trainrun::trainrun. Nothing
# installed names the build or the source tree (tests/install/install_test.cpp checks).
include(CMakePackageConfigHelpers)
set(TRAINRUN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/trainrun)

# The binary finds the library beside it wherever the prefix is (P/bin/../lib).
file(RELATIVE_PATH TRAINRUN_BIN_TO_LIB /${CMAKE_INSTALL_BINDIR} /${CMAKE_INSTALL_LIBDIR})
set_target_properties(trainrun PROPERTIES INSTALL_RPATH "$ORIGIN/${TRAINRUN_BIN_TO_LIB}")
install(TARGETS trainrun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS trainrun_core EXPORT trainrunTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# Public headers, each at its path in the tree under include/trainrun/.
set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/public_headers.txt)
file(STRINGS ${CMAKE_SOURCE_DIR}/cmake/public_headers.txt TRAINRUN_PUBLIC_HEADERS REGEX "^[^#]")
foreach(header IN LISTS TRAINRUN_PUBLIC_HEADERS)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/trainrun/${dir})
endforeach()
if(TRAINRUN_SYSTEM_FMT)  # a LibTorch with fmt headers of its own: the system's fmt first (CMakeLists.txt)
  install(DIRECTORY ${TRAINRUN_SYSTEM_FMT} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/trainrun)
endif()

install(DIRECTORY ${CMAKE_SOURCE_DIR}/recipes/ DESTINATION ${CMAKE_INSTALL_DATADIR}/trainrun/recipes
        FILES_MATCHING PATTERN "*.yaml")

install(EXPORT trainrunTargets NAMESPACE trainrun:: DESTINATION ${TRAINRUN_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/trainrunConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/package/trainrunConfig.cmake INSTALL_DESTINATION ${TRAINRUN_CMAKE_DIR})
# 0.x: a plugin built against 0.1 is for 0.1 only (the minor is part of the SOVERSION).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/trainrunConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/trainrunConfig.cmake ${CMAKE_BINARY_DIR}/package/trainrunConfigVersion.cmake
        DESTINATION ${TRAINRUN_CMAKE_DIR})

# --- the .deb: `cd build && cpack -G DEB` -----------------------------------------------------------
# Depends from dpkg-shlibdeps (dpkg-dev; CPack finds ELF files with `file`): Debian's packages of
# the libraries the binary and libtrainrun link (libtorch, OpenCV, yaml-cpp, ...). Building a
# plugin against the package needs the -dev packages of the public dependencies: Suggests.
set(CPACK_PACKAGE_NAME trainrun)
set(CPACK_PACKAGE_VENDOR "trainrun")
set(CPACK_PACKAGE_CONTACT "trainrun maintainers <maintainers@users.noreply.a-seed-bcd50397.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "declarative training-job runner on LibTorch")
set(CPACK_PACKAGE_DESCRIPTION "trainrun trains image classifiers from a YAML recipe on LibTorch:
one process or many (DDP over gloo), checkpoints and resume, Hugging Face Hub weights. The
package has the trainrun binary, libtrainrun, its public headers and CMake package (for plugins
and hand-written loops: find_package(trainrun)) and the recipes in /usr/share/trainrun/recipes.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # trainrun_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # DEBIAN/shlibs and the ldconfig trigger for libtrainrun
# dpkg-shlibdeps looks for the package's own libtrainrun here (the binary's NEEDED entry).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR})
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dataset-fashion-mnist")  # the quickstart's data
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "cmake, g++, libtorch-dev, libyaml-cpp-dev, libfmt-dev, libspdlog-dev, nlohmann-json3-dev")
set(CPACK_GENERATOR DEB)
include(CPack)
