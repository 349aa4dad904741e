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

/* Pipelined: post several messages, then settle them with one wait for
 * their confirms, instead of a round trip each. A message is one entry;
 * `key` tells it apart in a basic.return (the value of the integer header
 * settle is given), `note` (the caller's) is appended to the detail. */
struct dlq_pub_pending {
	int64_t			 key;
	char			 note[160];
	uint64_t		 tag;		/* set by post */
	uint64_t		 conn_gen;	/* the connection it went on */
	bool			 settled, returned;
	enum dlq_pub_outcome	 out;
	char			 detail[704];	/* 512 + note */
};

/* Sends without waiting: 0, or -1 with the entry settled (FAILED: nothing
 * went out; UNKNOWN: it may have). */
int	dlq_publisher_post(struct dlq_publisher *, const char *exchange,
	    const char *routing_key, const amqp_basic_properties_t *,
	    amqp_bytes_t body, struct dlq_pub_pending *);

/* Waits (10 s at most) for the verdicts of the posted, unsettled entries
 * of `v` and settles every one of them. A basic.return is matched to its
 * entry by the header `key_header` (with one entry open it needs none).
 * A lost connection or a missing confirm leaves them UNKNOWN. */
void	dlq_publisher_settle(struct dlq_publisher *, struct dlq_pub_pending *v,
	    size_t n, const char *key_header);
/* Applies the verdicts (and a connection.blocked) that have already
 * arrived, without waiting: called between posts, it lets the next post
 * see a block at once. */
void	dlq_publisher_pump(struct dlq_publisher *, struct dlq_pub_pending *v,
	    size_t n, const char *key_header);

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

/* The connection holds deliveries read on it (a live-queue replay): it
 * is never replaced for being idle, since a delivery read on it goes
 * back to its queue with it while its copy would be published (sent
 * twice by the next run). A connection that did die makes the send's
 * outcome unknown and ends the run. */
void	dlq_publisher_hold(struct dlq_publisher *);

const char *dlq_pub_outcome_name(enum dlq_pub_outcome);

#endif
