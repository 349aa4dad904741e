/* mgmt.h - the broker's management HTTP API, read for two things: how
 * many messages were published to a queue in the last hour, so that
 * `dlqctl stats` can say which share of a queue's traffic dead-letters;
 * and whether a binding the broker user may not declare is there.
 *
 * Two GETs of /api/queues/VHOST/QUEUE per queue asked about (those with
 * dead letters in the hour: a few, not the broker's whole list, which it
 * answers from a cache): one for the publish count now, one with the
 * broker's samples of the last hour (msg_rates_age=3600, one a minute),
 * whose oldest is the count when the hour began. (With samples asked for,
 * the count the API gives is the last full minute's, up to a minute
 * behind; a burst of dead letters would read as a share of nothing.) The
 * management plugin keeps samples in its default rates mode (basic);
 * without them a queue's count since the broker's statistics began is all
 * there is, and the answer says so.
 * The credentials are the broker URL's unless the management URL carries
 * its own; no error text holds a password or a path. One thread per
 * handle. */
#ifndef DLQ_MGMT_H
#define DLQ_MGMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define DLQ_MGMT_WINDOW_MS	3600000		/* the last hour */

/* What the API says of one queue. */
struct dlq_mgmt_count {
	int64_t	 published;	/* in the window (or since the statistics began) */
	bool	 windowed;	/* false: the broker kept no samples */
};

/* Reads the API's two answers about one queue: `now_json` (its publish
 * count now) and `window_json` (with the hour's samples). Returns 0, or
 * -1 with `why`. */
int	dlq_mgmt_parse(const char *now_json, size_t now_len,
	    const char *window_json, size_t window_len,
	    struct dlq_mgmt_count *, char *why, size_t whylen);

struct dlq_mgmt;

/* A client of the API at cfg->management_url (kept alive between
 * queues); all requests together end by `deadline_ms` (dlq_now_ms()). */
struct dlq_mgmt	*dlq_mgmt_open(const struct dlq_config *cfg,
		    int64_t deadline_ms);
void		 dlq_mgmt_close(struct dlq_mgmt *);

/* Asks about `queue`. Returns 0; 1 when the broker has no such queue;
 * -1 with `why` (the API's host and what went wrong) when it cannot be
 * asked or answered otherwise. */
int	dlq_mgmt_published(struct dlq_mgmt *, const char *queue,
	    struct dlq_mgmt_count *, char *why, size_t whylen);

/* Whether the answer of /api/bindings/VHOST/e/X/q/Q (a JSON array)
 * holds a binding with routing key `key`: 0 yes, 1 no, -1 not such an
 * answer. */
int	dlq_mgmt_parse_bound(const char *json, size_t len, const char *key);

/* Whether `queue` is bound to `exchange` with `key`, as the API lists
 * its bindings (for a broker user that may not declare them, whose
 * bindings AMQP cannot show): 0 bound; 1 not (or the exchange or queue
 * is not there); -1 with `why` when it cannot be asked or answered. */
int	dlq_mgmt_bound(struct dlq_mgmt *, const char *exchange,
	    const char *queue, const char *key, char *why, size_t whylen);

#endif
