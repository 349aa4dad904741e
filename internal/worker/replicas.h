/* replicas.h - what the workers sharing one archive coordinate through it
 * (the storage seam, beside archive.h): which of them leads, and the
 * alert groups no digest has announced yet.
 *
 * An SQLite archive has one worker (its file lock): that worker always
 * leads and keeps its pending alerts in memory, so these operations do
 * nothing there. A PostgreSQL archive may have replicas: the leader holds
 * a lease row with an expiry, renewed while it lives, and the dead letters
 * every replica archives are staged as alert groups in the batch's own
 * transaction, for whichever replica leads when the next digest is due. */
#ifndef DLQ_REPLICAS_H
#define DLQ_REPLICAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"

struct dlq_archive;

/* Whether other workers may share the archive (PostgreSQL). */
bool	dlq_archive_shared(const struct dlq_archive *);

/* Takes or renews the leader's lease for `replica` until `ttl_ms` after
 * the server runs the statement (so no sooner than ttl_ms after this
 * call began: another replica cannot take it before then). 1: held;
 * 0: another replica holds it (named in holder[n]); -1: error (kept).
 * On SQLite: 1. */
int	dlq_archive_lease(struct dlq_archive *, const char *replica,
	    int64_t ttl_ms, char *holder, size_t n);
/* Gives the lease up at a stop, so that another replica takes over at
 * once. */
void	dlq_archive_lease_release(struct dlq_archive *, const char *replica);

/* In the transaction that archives `batch`: adds its groups to what is
 * pending for each of the n webhook targets (their archive keys, see
 * alert.c). 0 / -1 (the batch is rolled back). Nothing on SQLite. */
int	dlq_archive_alerts_stage(struct dlq_archive *,
	    const char *const *targets, size_t n,
	    const struct dlq_digest *batch);
/* The leader, when a digest of `target` is due: moves what is pending
 * into the digest being sent (which keeps the groups of a digest that
 * failed or whose leader died) and adds that digest's groups to `out`.
 * The number of dead letters added, or -1. */
int64_t	dlq_archive_alerts_take(struct dlq_archive *, const char *target,
	    struct dlq_digest *out);
/* The digest of `target` was delivered: its groups are gone. 0 / -1 */
int	dlq_archive_alerts_done(struct dlq_archive *, const char *target);

#endif
