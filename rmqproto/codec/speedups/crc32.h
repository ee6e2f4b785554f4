/*
 * The IEEE CRC32 of the store's body checksums (zlib's crc32), folded with the CPU's
 * carry-less multiply where it has one.
 */
#ifndef RMQPROTO_CRC32_H
#define RMQPROTO_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Fill the byte table and look for PCLMULQDQ; call once before rmq_crc32. */
void rmq_crc32_init(void);

/* zlib's crc32(crc, p, n): the CRC32 of n bytes at p, continuing from crc. */
uint32_t rmq_crc32(uint32_t crc, const unsigned char *p, size_t n);

/* Whether rmq_crc32 folds 16-byte blocks with PCLMULQDQ on this CPU. */
int rmq_crc32_folds(void);

#endif
