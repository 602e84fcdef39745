/* Wine 8 has no ProcessPrng, which the Rust standard library (1.78 and later) takes from
 * bcryptprimitives.dll for its random numbers (HashMap keys). This DLL gives it, forwarding to
 * RtlGenRandom (advapi32's SystemFunction036), which Wine has. For the Wine test run only. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG part = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, part))
            return FALSE;
        data += part;
        length -= part;
    }
    return TRUE;
}
