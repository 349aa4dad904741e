/* record.c - a dead letter's fingerprint and encodings, for the archive
 * backends (record.h). */
#include "record.h"

#include <amqp.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter.h"

int
dlq_record_enc_init(struct dlq_record_enc *e)
{
	memset(e, 0, sizeof(*e));
	dlq_buf_init(&e->keys);
	if ((e->headers = malloc(DLQ_HEADERS_MAX)) == NULL ||
	    (e->md = EVP_MD_CTX_new()) == NULL ||
	    (e->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL) {
		dlq_record_enc_release(e);
		return -1;
	}
	return 0;
}

void
dlq_record_enc_release(struct dlq_record_enc *e)
{
	free(e->headers);
	EVP_MD_CTX_free(e->md);
	EVP_MD_free(e->sha256);
	dlq_buf_release(&e->keys);
	memset(e, 0, sizeof(*e));
}

static void
hex(const unsigned char *d, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 0xf];
	}
	out[2 * n] = '\0';
}

/* The newest x-death time of a dead letter, seconds; 0 if it has none. */
static int64_t
death_time(const struct dlq_dead_letter *d)
{
	int64_t t = 0;
	size_t i;

	for (i = 0; i < d->n_xdeath; i++)
		if (d->xdeath[i].time > t)
			t = d->xdeath[i].time;
	return t;
}

static void
routing_keys(struct dlq_buf *keys, const struct dlq_dead_letter *d)
{
	int i;

	dlq_buf_reset(keys);
	dlq_buf_addc(keys, '[');
	for (i = 0; d->n_xdeath > 0 && d->xdeath[0].routing_keys != NULL &&
	    i < d->xdeath[0].routing_keys->num_entries; i++) {
		if (i > 0)
			dlq_buf_addc(keys, ',');
		dlq_field_json(keys, &d->xdeath[0].routing_keys->entries[i]);
	}
	dlq_buf_addc(keys, ']');
}

void
dlq_record_encode(struct dlq_record_enc *e, const struct dlq_record *r)
{
	const struct dlq_dead_letter *d = r->d;
	const amqp_basic_properties_t *p = d->props;
	amqp_bytes_t enc = { DLQ_HEADERS_MAX, e->headers };
	unsigned char body_sha[32];
	unsigned int n = 32;
	uint64_t t;
	int i;

	EVP_DigestInit_ex2(e->md, e->sha256, NULL);
	EVP_DigestUpdate(e->md, d->body, d->body_len);
	EVP_DigestFinal_ex(e->md, body_sha, NULL);
	hex(body_sha, 32, e->body_hex);
	e->headers_len = 0;
	e->has_headers = (p->_flags & AMQP_BASIC_HEADERS_FLAG) &&
	    amqp_encode_table(enc, (amqp_table_t *)&p->headers,
	    &e->headers_len) == AMQP_STATUS_OK;
	if (!e->has_headers)
		e->headers_len = 0;
	e->died = death_time(d);
	routing_keys(&e->keys, d);

	EVP_DigestInit_ex2(e->md, e->sha256, NULL);
	EVP_DigestUpdate(e->md, d->dlq.p, d->dlq.n);
	EVP_DigestUpdate(e->md, "\0", 1);
	if (p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG)
		EVP_DigestUpdate(e->md, p->message_id.bytes,
		    p->message_id.len);
	EVP_DigestUpdate(e->md, "\0", 1);
	if (p->_flags & AMQP_BASIC_TIMESTAMP_FLAG)
		EVP_DigestUpdate(e->md, &p->timestamp, sizeof(p->timestamp));
	EVP_DigestUpdate(e->md, e->headers, e->headers_len);
	EVP_DigestUpdate(e->md, body_sha, 32);
	EVP_DigestFinal_ex(e->md, e->legacy, &n);
	t = (uint64_t)e->died;
	for (i = 0; i < 8; i++)
		e->fingerprint[i] = (unsigned char)(t >> (56 - 8 * i));
	memcpy(e->fingerprint + 8, e->legacy, 24);
}
