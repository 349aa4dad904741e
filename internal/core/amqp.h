/* amqp.h - connections to RabbitMQ with rabbitmq-c.
 *
 * rabbitmq-c has no connection recovery and its handles are not
 * thread-safe: every thread opens its own connection with
 * dlq_amqp_connect(), and on any error other than a timeout destroys it
 * and connects again after dlq_amqp_backoff_ms(). Connections log in with
 * a heartbeat and the capabilities consumer_cancel_notify and
 * connection.blocked, so a deleted queue arrives as basic.cancel and a
 * broker alarm as connection.blocked instead of silence. */
#ifndef DLQ_AMQP_H
#define DLQ_AMQP_H

#include <amqp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define DLQ_AMQP_CHANNEL	1

enum dlq_amqp_status {
	DLQ_AMQP_OK,
	DLQ_AMQP_RETRY,		/* broker unreachable or went away: try later */
	DLQ_AMQP_FATAL,		/* bad credentials, vhost, permissions */
};

/* Opens a connection named `name` (shown in the management UI), logs in
 * and opens channel DLQ_AMQP_CHANNEL. On failure returns NULL, sets
 * *status and writes a reason without secrets to `why`. */
amqp_connection_state_t dlq_amqp_connect(const struct dlq_config *,
	    const char *name, enum dlq_amqp_status *status, char *why,
	    size_t whylen);

/* Closes politely when possible and destroys; NULL ok. */
void	dlq_amqp_close(amqp_connection_state_t);

/* Human text for an RPC reply that is not normal; `buf` holds it. */
const char *dlq_amqp_reply_text(amqp_rpc_reply_t, char *buf, size_t n);

/* True when the reply is a server exception that closed the channel only
 * (the connection is still usable after dlq_amqp_reopen_channel()). */
bool	dlq_amqp_is_channel_error(amqp_rpc_reply_t, int *code);

/* Sends channel.close-ok / reopens the channel after a channel error. */
int	dlq_amqp_reopen_channel(amqp_connection_state_t);	/* 0 / -1 */

/* Exponential backoff with full jitter: uniform in [min, min(max,
 * min * 2^attempt)], so many consumers do not reconnect in step. */
int64_t	dlq_amqp_backoff_ms(unsigned attempt, int64_t min, int64_t max);

/* Monotonic milliseconds (for intervals), wall-clock milliseconds (for
 * timestamps people read). */
int64_t	dlq_now_ms(void);
int64_t	dlq_now_us(void);
int64_t	dlq_wall_ms(void);

/* Sleeps up to `ms`, waking early when *stop becomes true. */
void	dlq_sleep_ms(int64_t ms, const atomic_bool *stop);

#endif
