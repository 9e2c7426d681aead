/*
 * A stand-in for Windows' bcryptprimitives.dll, which wine 8.0 (Debian bookworm's) lacks:
 * Rust's standard library (1.78 and later) imports its ProcessPrng for random numbers, so
 * every Rust program or library built for Windows fails to load under wine 8.0 without it.
 * Windows 10 and later ship the DLL; scripts/windows builds this one into its wine prefix
 * only. ProcessPrng fills the buffer from RtlGenRandom (advapi32's SystemFunction036), which
 * wine has, and like Windows' never fails.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length > 0) {
    const ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
    if (!SystemFunction036(data, chunk)) ExitProcess(1);
    data += chunk;
    length -= chunk;
  }
  return TRUE;
}
