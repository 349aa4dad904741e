/* replaysend.h - publish one claimed replay (dlqctl and the worker's
 * redrive share it).
 *
 * A claim (replaysrv.h) carries the archived message: properties, the raw
 * AMQP header table and the body, base64. It goes out with its original
 * properties (user_id only when it is the user we publish as: the broker
 * checks it), persistent, with the replay headers of replay.h, and waits
 * for the broker's confirm. */
#ifndef DLQ_REPLAYSEND_H
#define DLQ_REPLAYSEND_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "publisher.h"

/* The header that tells a replayed message apart (its archive id). */
#define DLQ_REPLAY_KEY_HEADER	"x-replay-of"

/* `detail` says what happened (always set). */
enum dlq_pub_outcome dlq_replay_send(const struct dlq_config *,
	    struct dlq_publisher *, const cJSON *claim, const char *reason,
	    bool reset_retries, char *detail, size_t n);

/* The same without waiting for the confirm: 0 and `e` to settle with
 * dlq_publisher_settle(..., DLQ_REPLAY_KEY_HEADER), or -1 and `e`
 * settled (nothing sent, or the send broke: see e->out). */
int	dlq_replay_post(const struct dlq_config *, struct dlq_publisher *,
	    const cJSON *claim, const char *reason, bool reset_retries,
	    struct dlq_pub_pending *e);

/* Appends the verdict on `claim` to the `results` array of a
 * replay_finish request. */
void	dlq_replay_verdict(cJSON *results, const cJSON *claim,
	    enum dlq_pub_outcome, const char *detail);

/* A replay_finish request `fin` ("ids" and "results", one each per claim)
 * as requests that print to at most `max` bytes each, in order: its
 * results and ids are moved into them, each with its id. (A chunk of
 * long broker errors can pass the worker's request limit, and a finish it
 * refused would leave its records 'replaying'.) A result longer than
 * `max` alone goes in a request of its own. Returns a cJSON array of
 * requests; `fin` keeps what else it had. */
cJSON	*dlq_replay_finish_split(cJSON *fin, size_t max);

#endif
