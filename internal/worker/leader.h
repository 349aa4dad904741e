/* leader.h - which worker runs the jobs there must be one of: sending
 * digests, the threshold alerts and escalations, the retention run and
 * the automatic redrive.
 *
 * On an SQLite archive the one worker (its file lock) leads. On a shared
 * (PostgreSQL) archive a thread of each replica asks for the archive's
 * lease (replicas.h) every second: the holder renews it, the others find
 * it held. A replica leads while the lease it last renewed has not run
 * out by its own clock, counted from before it asked, so that it stops
 * leading before the server would give the lease to another; a renewal
 * that fails or gets no answer leaves it to run out. When the leader
 * dies, another replica takes the lease once it has run out (its time to
 * live plus a second at most); a leader that stops gives it up at once. */
#ifndef DLQ_LEADER_H
#define DLQ_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct dlq_archive;

/* Starts asking for the lease of a shared archive with `own`, a handle
 * of its own (closed by dlq_leader_stop()); NULL: the archive is not
 * shared, this worker leads. 0 / -1 (logged). */
int	dlq_leader_start(const struct dlq_config *, struct dlq_archive *own);
/* Gives the lease up (when held) and stops the thread. */
void	dlq_leader_stop(void);
/* Whether this worker leads now; any thread. */
bool	dlq_leading(void);
/* How much longer it surely leads, in ms (INT64_MAX on SQLite; 0 when
 * it does not lead): what a job that must finish as the leader (a POST)
 * compares with its own time limit. */
int64_t	dlq_leading_left_ms(void);
/* This worker's name among the replicas: "host:pid". */
const char *dlq_replica(void);

#endif
