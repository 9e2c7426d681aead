# CMake toolchain file: Windows on x86-64, built on Linux with MinGW-w64's GCC (Debian's
# g++-mingw-w64-x86-64-posix: its POSIX threads model gives std::thread and std::mutex, which
# LevelDB uses). For LevelDB's own CMake and for programs that link leveldb-bloom:
#
#   cmake -S leveldb -B build-windows -DCMAKE_TOOLCHAIN_FILE=<this file>
#
# Executables are linked statically (libstdc++, libgcc, winpthreads): they run on Windows, or
# under wine, with no MinGW DLL beside them. CMAKE_CROSSCOMPILING_EMULATOR is wine when it is
# installed, so that ctest and gtest's test discovery run the programs.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(_lb_mingw x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${_lb_mingw}-gcc-posix)
set(CMAKE_CXX_COMPILER ${_lb_mingw}-g++-posix)
set(CMAKE_RC_COMPILER ${_lb_mingw}-windres)
set(CMAKE_FIND_ROOT_PATH /usr/${_lb_mingw})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
find_program(_lb_wine NAMES wine wine64 PATHS /usr/lib/wine NO_CMAKE_FIND_ROOT_PATH)
if(_lb_wine)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${_lb_wine}")
endif()
