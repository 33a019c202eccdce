/* Rust's std on Windows draws random bytes from ProcessPrng in bcryptprimitives.dll (Windows 10+).
 * Debian 12's wine (8.0) has no such DLL, so scripts/wine-smoke.sh builds this stand-in into the
 * wine prefix: ProcessPrng over advapi32's RtlGenRandom (SystemFunction036). Not shipped. */
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
