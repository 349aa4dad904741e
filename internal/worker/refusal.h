/* refusal.h - why a change by id (assign, drop, reopen) left a record
 * as it was, in the same words from every archive backend: dlqctl prints
 * them and the audit keeps them. */
#ifndef DLQ_REFUSAL_H
#define DLQ_REFUSAL_H

#include <stdbool.h>
#include <stddef.h>

/* Writes the reason into buf[n] and returns buf, for a record of
 * `status` that the change did not take. For a reopen of a discarded
 * record: a replay of it that may have arrived (`outcome` "published"
 * or "unknown", NULL: none), else its payload purged. */
const char *dlq_refusal(char *buf, size_t n, const char *status,
	    bool reopen, const char *outcome);

#endif
