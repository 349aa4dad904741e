/* topology.h - the RabbitMQ topology the worker owns, and asserting it.
 *
 * A topology file (libconfig) names the work exchange, the dead-letter
 * exchange, the DLQ suffix and the work queues. For each work queue Q:
 *   Q        durable; dead-letters to the DLX with routing key Q (a
 *            quorum queue may do so at least once: kept until the DLQ
 *            has it, instead of dropped when no DLQ takes it)
 *   Q.retry  when retry_delay_ms > 0: message TTL, dead-letters back to Q
 *            through the default exchange
 *   Q<sfx>   durable, bound to the DLX with routing key Q
 * Asserting is idempotent. An object that exists with other arguments is
 * never deleted or redeclared: the difference is logged as
 * `topology_conflict` and the rest is still asserted. */
#ifndef DLQ_TOPOLOGY_H
#define DLQ_TOPOLOGY_H

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amqp.h"
#include "buf.h"
#include "config.h"

enum dlq_queue_type { DLQ_QUEUE_CLASSIC, DLQ_QUEUE_QUORUM };

struct dlq_queue {
	char			*name;
	char			*dlq_name;	/* name + suffix */
	char			*retry_name;	/* NULL: no retry queue */
	enum dlq_queue_type	 type;
	int64_t			 retry_delay_ms;
	int64_t			 max_retries;	/* for applications and inject */
	int64_t			 delivery_limit;	/* quorum; 0: broker default */
	bool			 at_least_once;	/* quorum: x-dead-letter-strategy */
	bool			 monitored;
};

struct dlq_topology {
	char			*source;	/* file path or "(embedded)" */
	char			*work_exchange;
	char			*dead_letter_exchange;
	char			*dlq_suffix;
	struct dlq_queue	*queues;
	size_t			 n_queues;
};

struct dlq_assert_result {
	unsigned	declared;	/* exchanges, queues and bindings */
	unsigned	conflicts;
	unsigned	errors;		/* other refusals and failures */
	/* Declarations the broker refused for want of the configure (or, for
	 * a binding, write / read) permission: each exchange or queue is
	 * then looked for with a passive declare, which needs none, each
	 * binding in the management API (bindings_why below). */
	unsigned	refused;
	unsigned	present;	/* refused, and found on the broker (a
					 * binding: by the management API) */
	unsigned	missing;	/* refused, and not there */
	unsigned	unchecked;	/* refused bindings not looked at */
	unsigned	missing_bindings;	/* of `missing` */
	char		missing_binding[160];	/* the first, "X -> Q" */
	/* The queues of `missing`, each followed by a newline, as far as
	 * they fit (dlq_assert_missing_queue) */
	char		missing_queues[1024];
	bool		missing_queues_cut;
	char		refusal[512];	/* the broker's words for the first */
	/* Refused bindings are looked for through the management API when
	 * rabbitmq.management_url is set (AMQP cannot show them); why that
	 * failed (the rest then go unchecked), or "" */
	char		bindings_why[256];
};

/* Loads `path` (NULL: the embedded line topology); `suffix` (NULL: the
 * file's) overrides dlq_suffix. NULL on error, with one "file:line:
 * message" per problem appended to `errors`. */
struct dlq_topology *dlq_topology_load(const char *path, const char *suffix,
	    struct dlq_buf *errors);
void	dlq_topology_free(struct dlq_topology *);	/* NULL ok */

size_t	dlq_topology_monitored(const struct dlq_topology *);

/* The work queue named `name`, or whose DLQ it is; NULL when neither. */
const struct dlq_queue *dlq_topology_find(const struct dlq_topology *,
	    const char *name);

/* The work queue or DLQ name nearest to `name`, one that find() does
 * not know (a typo: leave_evnt), or NULL when none is near. */
const char *dlq_topology_suggest(const struct dlq_topology *,
	    const char *name);

/* Connects with `c`, asserts `t`, closes, and logs `topology_asserted`.
 * DLQ_AMQP_OK: `res` tells what happened; otherwise `why` says why the
 * broker could not be reached (RETRY) or refused us (FATAL). */
enum dlq_amqp_status dlq_topology_apply(const struct dlq_config *c,
	    const struct dlq_topology *t, struct dlq_assert_result *res,
	    char *why, size_t whylen);

/* Whether the assert found queue `name` missing (refused, not there): 1
 * yes, 0 no, -1 not known (more were missing than the result holds). */
int	dlq_assert_missing_queue(const struct dlq_assert_result *,
	    const char *name);

/* Splits the broker's PRECONDITION_FAILED text ("inequivalent arg 'A' for
 * queue 'Q' in vhost 'V': received X but current is Y") into the argument,
 * the wanted and the live value. Pure; false when the text has another
 * form. Outputs are NUL-terminated, cut to their size. */
bool	dlq_topology_parse_conflict(const char *text, char *arg, size_t,
	    char *wanted, size_t, char *live, size_t);

extern const char dlq_topology_default_text[];

#endif
