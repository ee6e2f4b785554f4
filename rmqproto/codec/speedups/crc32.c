/*
 * CRC32 (polynomial 0x04C11DB7, bit-reflected, as zlib and java.util.zip.CRC32).
 *
 * Bodies of 64 bytes and more are folded 64 bytes a step with PCLMULQDQ, then reduced
 * to 32 bits by Barrett reduction (Gopal et al., "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ Instruction", Intel, 2009); what is left over, shorter
 * inputs and CPUs without the instruction go a byte a step through a table.
 */
#include "crc32.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CAN_FOLD 1
#include <immintrin.h>
#endif

#define REFLECTED_POLYNOMIAL 0xEDB88320u

static uint32_t table[256];
static int folds;

void
rmq_crc32_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int bit = 0; bit < 8; bit++)
            c = (c & 1) ? (c >> 1) ^ REFLECTED_POLYNOMIAL : c >> 1;
        table[i] = c;
    }
#ifdef CAN_FOLD
    __builtin_cpu_init();
    folds = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}

int
rmq_crc32_folds(void)
{
    return folds;
}

static uint32_t
bytewise(uint32_t c, const unsigned char *p, size_t n)
{
    while (n--)
        c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c;
}

#ifdef CAN_FOLD
#define FOLD_TARGET __attribute__((target("pclmul,sse4.1")))

/* x carried 128 bits (or 512, by k) further and added to next. */
FOLD_TARGET static inline __m128i
fold_into(__m128i x, __m128i next, __m128i k)
{
    __m128i low = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i high = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

FOLD_TARGET static inline __m128i
load(const unsigned char *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

/* The CRC register after n bytes (n >= 64, a multiple of 16), from register c. */
FOLD_TARGET static uint32_t
fold(uint32_t c, const unsigned char *p, size_t n)
{
    /* x^k mod P for the fold distances, bit-reflected: 512 bits (low, high) ... */
    const __m128i by512 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    /* ... 128 bits ... */
    const __m128i by128 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    /* ... and 64 bits */
    const __m128i by64 = _mm_set_epi64x(0, 0x163cd6124);
    /* P (low) and floor(x^64 / P) (high), bit-reflected, for the Barrett reduction */
    const __m128i barrett = _mm_set_epi64x(0x1f7011641, 0x1db710641);
    const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);

    __m128i x1 = _mm_xor_si128(load(p), _mm_cvtsi32_si128((int)c));
    __m128i x2 = load(p + 16), x3 = load(p + 32), x4 = load(p + 48);
    for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
        x1 = fold_into(x1, load(p), by512);
        x2 = fold_into(x2, load(p + 16), by512);
        x3 = fold_into(x3, load(p + 32), by512);
        x4 = fold_into(x4, load(p + 48), by512);
    }
    x1 = fold_into(x1, x2, by128);
    x1 = fold_into(x1, x3, by128);
    x1 = fold_into(x1, x4, by128);
    for (; n >= 16; p += 16, n -= 16)
        x1 = fold_into(x1, load(p), by128);

    /* 128 bits to 64, then 64 to 32 (both append 32 zero bits to the message) */
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(by128, x1, 0x01));
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 4),
                       _mm_clmulepi64_si128(_mm_and_si128(x1, low32), by64, 0x00));
    /* Barrett reduction of the 64 bits left to the 32-bit remainder */
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x1, t), 1);
}
#endif

uint32_t
rmq_crc32(uint32_t crc, const unsigned char *p, size_t n)
{
    uint32_t c = ~crc;
#ifdef CAN_FOLD
    if (folds && n >= 64) {
        size_t blocks = n & ~(size_t)15;
        c = fold(c, p, blocks);
        p += blocks;
        n -= blocks;
    }
#endif
    return ~bytewise(c, p, n);
}
