# `cmake --install`: the shared libraries with their SONAME and symlinks, the static
# libraries, the header, a pkg-config file and a CMake package. The libraries are built by
# cargo (imported targets), so they are installed as files.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The SONAME: 0.x releases may break compatibility at a minor version. It is set on the
# installed copy with patchelf: cargo passes a dependency's cdylib link arguments on to its
# dependents, so a -soname given to the core library's link would also name the drop-in.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(LEVELDB_BLOOM_SOVERSION "0.${PROJECT_VERSION_MINOR}")
else()
  set(LEVELDB_BLOOM_SOVERSION "${PROJECT_VERSION_MAJOR}")
endif()
find_program(LEVELDB_BLOOM_PATCHELF patchelf DOC "patchelf, to set the installed SONAMEs")

# libleveldb_bloom.so.X.Y.Z, with libleveldb_bloom.so.<soversion> and .so linking to it.
function(leveldb_bloom_install_shared built name)
  if(NOT LEVELDB_BLOOM_PATCHELF)
    install(CODE "message(FATAL_ERROR \"installing lib${name}: patchelf is needed to set its SONAME (Debian: apt-get install patchelf)\")")
    return()
  endif()
  set(real "lib${name}.so.${PROJECT_VERSION}")
  install(FILES "${built}" DESTINATION "${CMAKE_INSTALL_LIBDIR}" RENAME "${real}"
          PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                      WORLD_READ WORLD_EXECUTE)
  install(CODE "
    set(_dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}\")
    execute_process(COMMAND \"${LEVELDB_BLOOM_PATCHELF}\" --set-soname lib${name}.so.${LEVELDB_BLOOM_SOVERSION}
                            \"\${_dir}/${real}\" COMMAND_ERROR_IS_FATAL ANY)
    execute_process(COMMAND \"${CMAKE_COMMAND}\" -E create_symlink ${real}
                            \"\${_dir}/lib${name}.so.${LEVELDB_BLOOM_SOVERSION}\")
    execute_process(COMMAND \"${CMAKE_COMMAND}\" -E create_symlink lib${name}.so.${LEVELDB_BLOOM_SOVERSION}
                            \"\${_dir}/lib${name}.so\")
    message(STATUS \"Symlinks: \${_dir}/lib${name}.so -> .so.${LEVELDB_BLOOM_SOVERSION} -> ${real}\")")
endfunction()

leveldb_bloom_install_shared("${LEVELDB_BLOOM_SHARED_LIBRARY}" leveldb_bloom)
install(FILES "${LEVELDB_BLOOM_STATIC_LIBRARY}" DESTINATION "${CMAKE_INSTALL_LIBDIR}")
if(LEVELDB_BLOOM_BUILD_DROPIN)
  leveldb_bloom_install_shared("${LEVELDB_BLOOM_DROPIN_SHARED_LIBRARY}" leveldb_bloom_dropin)
  install(FILES "${LEVELDB_BLOOM_DROPIN_STATIC_LIBRARY}" DESTINATION "${CMAKE_INSTALL_LIBDIR}")
endif()
install(FILES "${LEVELDB_BLOOM_INCLUDE_DIR}/leveldb_bloom.h"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

# pkg-config, relocatable (paths relative to the .pc file).
set(_lb_pcdir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
file(RELATIVE_PATH LEVELDB_BLOOM_PC_TO_PREFIX "/prefix/${_lb_pcdir}" "/prefix")
string(REGEX REPLACE "/$" "" LEVELDB_BLOOM_PC_TO_PREFIX "${LEVELDB_BLOOM_PC_TO_PREFIX}")
# What the static library needs besides itself: rustc --print native-static-libs, less what
# the C compiler links by itself (libc; the unwinder, which is libgcc_s in a dynamic link and
# libgcc_eh in a fully static one, where -lgcc_s cannot be found) and what glibc 2.34 and
# later keeps in libc (util, rt).
set(LEVELDB_BLOOM_PC_LIBS_PRIVATE "-lpthread -lm -ldl")
configure_file("${PROJECT_SOURCE_DIR}/cmake/leveldb_bloom.pc.in"
               "${PROJECT_BINARY_DIR}/leveldb_bloom.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/leveldb_bloom.pc" DESTINATION "${_lb_pcdir}")

# The CMake package.
set(_lb_cmakedir "${CMAKE_INSTALL_LIBDIR}/cmake/leveldb_bloom")
file(RELATIVE_PATH LEVELDB_BLOOM_CONFIG_TO_PREFIX "/prefix/${_lb_cmakedir}" "/prefix")
configure_file("${PROJECT_SOURCE_DIR}/cmake/leveldb_bloomConfig.cmake.in"
               "${PROJECT_BINARY_DIR}/leveldb_bloomConfig.cmake" @ONLY)
# 0.x: only the same minor version is compatible (as the SONAME says).
write_basic_package_version_file("${PROJECT_BINARY_DIR}/leveldb_bloomConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/leveldb_bloomConfig.cmake"
              "${PROJECT_BINARY_DIR}/leveldb_bloomConfigVersion.cmake"
        DESTINATION "${_lb_cmakedir}")
