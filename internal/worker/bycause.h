/* bycause.h - failure signature groups gathered by cause, whatever the
 * backend (causes.h): a backend hands over its groups the largest first
 * and reads a record's texts when asked; the gathering, the order and
 * the answer are here.
 *
 * An archive may hold 50 000 signatures: what is kept of each is a few
 * numbers, in arrays that grow by doubling (large blocks, mapped on their
 * own and returned to the system when freed), not a string of its own. */
#ifndef DLQ_BYCAUSE_H
#define DLQ_BYCAUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct dlq_bycause;

/* One signature group as the backend counted it (dlq_cases_groups):
 * the texts of its sample, its error masked with the rules of now. */
struct dlq_bycause_group {
	const char	*signature;
	const char	*queue, *dlq, *reason, *class, *error;
	int64_t		 count, unresolved, first_seen, last_seen, sample_id;
};

/* The texts of one record (queue, reason, class, error masked, message
 * id; NULL: SQL NULL), as a backend reads them for the answer. */
enum { DLQ_BYCAUSE_QUEUE, DLQ_BYCAUSE_REASON, DLQ_BYCAUSE_CLASS,
	DLQ_BYCAUSE_ERROR, DLQ_BYCAUSE_MESSAGE_ID, DLQ_BYCAUSE_TEXTS };
struct dlq_bycause_sample {
	bool		 found;
	const void	*text[DLQ_BYCAUSE_TEXTS];
	size_t		 len[DLQ_BYCAUSE_TEXTS];
};
/* Reads record `id` into *s (valid until the next call); false on an
 * archive error. */
typedef bool (*dlq_bycause_read)(void *arg, int64_t id,
	    struct dlq_bycause_sample *s);

/* For the groups of `queue` (a work queue or DLQ; NULL: all); NULL when
 * out of memory. */
struct dlq_bycause *dlq_bycause_new(const char *queue);
void	dlq_bycause_free(struct dlq_bycause *);	/* NULL ok */
/* Adds a group (the largest first); false when out of memory. */
bool	dlq_bycause_add(struct dlq_bycause *, const struct dlq_bycause_group *);
/* The groups added. */
size_t	dlq_bycause_groups(const struct dlq_bycause *);
/* Appends the chosen causes, the largest `limit` (causes.h's JSON),
 * their texts read by `read`. DLQ_OK, or DLQ_ERROR with `out` holding
 * the reason. */
int	dlq_bycause_json(struct dlq_bycause *, int64_t limit,
	    dlq_bycause_read read, void *arg, struct dlq_buf *out);
/* The answer when a window holds more than `max_groups` groups:
 * DLQ_REFUSED, `out` says so. */
int	dlq_bycause_too_many(size_t max_groups, int64_t since_ms,
	    struct dlq_buf *out);

#endif
