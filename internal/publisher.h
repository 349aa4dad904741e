/* publisher.h - a confirmed, mandatory publisher for replays.
 *
 * A replay counts only when the broker acks it with no basic.return: a
 * nack, a return (no queue bound: e.g. the target queue was deleted) or a
 * closed channel is FAILED (nothing was delivered; safe to try again), a
 * lost connection or a missing confirm is UNKNOWN (it may have arrived).
 * rabbitmq-c 0.11 can block forever writing to a dead peer, so the socket
 * is polled for writability with a timeout first, and the confirm is
 * awaited with a deadline. One publisher per thread. */
#ifndef DLQ_PUBLISHER_H
#define DLQ_PUBLISHER_H

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

enum dlq_pub_outcome { DLQ_PUB_OK, DLQ_PUB_FAILED, DLQ_PUB_UNKNOWN };

struct dlq_publisher;

/* `name` (static) is the connection name the broker shows. NULL on
 * failure, with the reason in `why`. */
struct dlq_publisher *dlq_publisher_open(const struct dlq_config *,
	    const char *name, char *why, size_t whylen);
void	dlq_publisher_close(struct dlq_publisher *);	/* NULL ok */

/* Publishes and waits for the broker's verdict; `detail` says what
 * happened (always set). */
enum dlq_pub_outcome dlq_publisher_send(struct dlq_publisher *,
	    const char *exchange, const char *routing_key,
	    const amqp_basic_properties_t *, amqp_bytes_t body,
	    char *detail, size_t detaillen);

/* True while the broker blocks this connection (a memory or disk alarm:
 * connection.blocked). A blocked publisher sends nothing: each send fails
 * at once ("not sent"), and the message it was waiting on when the block
 * came is UNKNOWN (the broker may deliver it when the alarm clears). */
bool	dlq_publisher_blocked(struct dlq_publisher *);

/* The publisher's channel, for basic.get / ack / nack of a live-queue
 * replay (NULL while disconnected). A connection idle for more than half
 * the heartbeat interval is replaced before the next send (the broker may
 * have closed it); asking for it here counts as use. */
amqp_connection_state_t dlq_publisher_conn(struct dlq_publisher *);

const char *dlq_pub_outcome_name(enum dlq_pub_outcome);

#endif
