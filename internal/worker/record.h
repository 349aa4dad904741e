/* record.h - what every archive backend computes from a dead letter
 * before it stores it: the fingerprint that makes a redelivery find its
 * record instead of making a second one, the body's digest, the headers
 * as the raw AMQP table (a replay sends back exactly the types that
 * arrived) and the routing keys as JSON. The same delivery gives the
 * same fingerprint in every backend and every worker. */
#ifndef DLQ_RECORD_H
#define DLQ_RECORD_H

#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "archive.h"
#include "buf.h"

#define DLQ_HEADERS_MAX	(256 * 1024)	/* larger header tables: not kept */

struct dlq_record_enc {
	EVP_MD_CTX	*md;		/* SHA-256, reused */
	EVP_MD		*sha256;	/* fetched once */
	unsigned char	*headers;	/* DLQ_HEADERS_MAX bytes, reused */
	struct dlq_buf	 keys;		/* routing keys JSON, reused */

	/* of the last dlq_record_encode() */
	unsigned char	 fingerprint[32];
	unsigned char	 legacy[32];	/* the form of before schema 5 */
	char		 body_hex[65];	/* SHA-256 of the body */
	size_t		 headers_len;
	bool		 has_headers;	/* encoded (else: none, or too big) */
	int64_t		 died;		/* newest x-death time, seconds */
};

/* 0, or -1 out of memory (nothing to release then). */
int	dlq_record_enc_init(struct dlq_record_enc *);
void	dlq_record_enc_release(struct dlq_record_enc *);

/* Fills the second half of `e` for `r`.
 *
 * The fingerprint is a SHA-256 over the dlq, the properties that
 * identify a message, the encoded headers (x-death included: its counts
 * and times) and the body digest, stored as the death time (8 bytes,
 * big-endian) followed by the digest's first 24 bytes: dead letters
 * arrive about in the order they died, so an index on fingerprints grows
 * at its end and its recent pages stay cached however large the archive
 * (a random key cost a page read and a write per insert once the index
 * outgrew the cache). Before schema 5 it was the whole digest
 * (`legacy`). */
void	dlq_record_encode(struct dlq_record_enc *, const struct dlq_record *r);

#endif
