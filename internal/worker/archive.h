/* archive.h - the durable record of every dead letter: the storage
 * seam. Everything the worker asks of its archive goes through the
 * operations of this header and of cases.h, causes.h, alertbacklog.h,
 * classrefresh.h, replaysrv.h, housekeep.h and gauges.h, on an opaque
 * handle (one connection); backends.c passes each to the backend the
 * handle was opened on, internal/worker/sqlite/ or postgres/, and no
 * header outside them names SQLite or libpq.
 *
 * Backends: SQLite (one file, WAL; one worker per file) and PostgreSQL
 * (archive.url; several workers, replicas, share one database).
 *
 * The worker writes a dead letter here and acks it only after the commit:
 * the ack deletes the broker's copy, so the commit is synchronous=FULL in
 * WAL mode. Consumers batch: begin, put many, commit, then one ack with
 * `multiple`. A delivery the broker marks redelivered is looked up by its
 * fingerprint first, so a crash between commit and ack does not make a
 * second record. A handle is used by one thread at a time: the
 * consumers share one, each of its transactions under the writer mutex
 * (begin ... commit), so that one connection and one page cache serve
 * them all. Errors are kept per thread. */
#ifndef DLQ_ARCHIVE_H
#define DLQ_ARCHIVE_H

#include <amqp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "deadletter.h"

#define DLQ_ARCHIVE_SCHEMA	10

struct dlq_archive;

/* What is stored besides the decoded delivery; strings borrowed. */
struct dlq_record {
	const struct dlq_dead_letter *d;
	const struct dlq_buf *xdeath_json;	/* dlq_deadletter_xdeath_json(d) */
	const char	*queue;		/* source queue */
	const char	*reason;	/* newest death reason or "unknown" */
	const char	*error;		/* redacted error text, "" if none */
	const char	*class;
	const char	*signature;	/* dlq_signature_id() */
	const char	*hint;
	int64_t		 received_ms;	/* wall clock */
	int64_t		 replay_of;	/* x-replay-of header, 0: none */
	int64_t		 replay_count;	/* x-replay-count header */
};

/* One worker per archive: two would each send the digests and run the
 * redrive of the same records. Takes an exclusive flock(2) on the file
 * at `path` (created empty, as dlq_archive_open would, when missing) and
 * keeps it in *fd, to be closed after every handle of the archive is
 * (closing any descriptor of the file drops SQLite's own locks on it).
 * EWOULDBLOCK: another process holds it. 0 otherwise; *fd is -1 when
 * the file could not be opened (dlq_archive_open then says why). The
 * lock does not touch SQLite's: flock and fcntl locks are apart on a
 * local file system. */
int	dlq_archive_claim(const char *path, int *fd);

/* Where the archive is, for a log line or a message: archive.path, or
 * archive.url's server and database without its password
 * ("postgresql://user@host:port/dbname"). Returns `out`. */
#define DLQ_ARCHIVE_WHERE_MAX	256
const char *dlq_archive_where(const struct dlq_config *, char *out,
	    size_t n);
/* For --check-config: what the archive holds, opened without changing
 * it: for PostgreSQL, connects and says the server's version and the
 * schema's; for SQLite nothing (its file is made at the first start).
 * 0, or -1 (it cannot be opened, or is newer than this program) with the
 * reason in `out`. */
int	dlq_archive_describe(const struct dlq_config *, struct dlq_buf *out);

/* Opens (creating and migrating the schema as needed). NULL: logged as
 * archive_open_failed. */
struct dlq_archive *dlq_archive_open(const struct dlq_config *);
void	dlq_archive_close(struct dlq_archive *);	/* NULL ok */

/* The page cache of a handle, KiB (default 256). 0 / -1 */
int	dlq_archive_cache(struct dlq_archive *, int64_t kib);
/* Hands the page cache's unused pages back (they come again with the
 * next reads); takes the writer mutex. */
void	dlq_archive_release_memory(struct dlq_archive *);

/* Every write transaction of the process holds one mutex (taken by
 * begin, released by commit or rollback); other writers (the control
 * thread, redrive, retention) take it around theirs. */
void	dlq_archive_writer_lock(void);
void	dlq_archive_writer_unlock(void);
/* Whether another thread waits for the writer mutex now. */
bool	dlq_archive_writer_wanted(void);

int	dlq_archive_begin(struct dlq_archive *);	/* 0 / -1 */
/* Returns the record's id (> 0; the existing id for a redelivered
 * duplicate, with *duplicate set) or -1. */
int64_t	dlq_archive_put(struct dlq_archive *, const struct dlq_record *,
	    bool *duplicate);
int	dlq_archive_commit(struct dlq_archive *);	/* 0, or -1 rolled back */
/* The same, but the writer mutex stays held: on success the caller does
 * what must follow the commit in its turn, then calls
 * dlq_archive_writer_unlock(); on failure (rolled back) it cleans up,
 * then calls dlq_archive_rollback(), which ends the turn. */
int	dlq_archive_commit_hold(struct dlq_archive *);
void	dlq_archive_rollback(struct dlq_archive *);
/* Whether the file at the archive's path, or its WAL or -shm, is no
 * longer the one this handle has open (deleted, renamed or replaced):
 * what it writes then is lost at the next start (for the WAL: at a
 * crash; for the -shm: when another process checkpoints). commit_hold
 * fails in that case. */
bool	dlq_archive_moved(struct dlq_archive *);

/* The last error, for the caller's log line; valid until the next call. */
const char *dlq_archive_errmsg(const struct dlq_archive *);

/* A number the worker keeps across restarts, by key (table
 * archive_meta): 1 and *value when set, 0 when not, -1 on error. */
int	dlq_archive_meta_get(struct dlq_archive *, const char *key,
	    int64_t *value);
/* Sets it, in a transaction of its own under the writer mutex. 0 / -1 */
int	dlq_archive_meta_set(struct dlq_archive *, const char *key,
	    int64_t value);

/* Once *stop is set, a write lock held by another process is not
 * waited for (archive.busy_timeout_ms) on this handle: the statement
 * fails as if the timeout had passed. */
void	dlq_archive_stop_waits(struct dlq_archive *, const atomic_bool *stop);

/* Whether the archive takes a write of about `bytes` now (written,
 * committed with the archive's durability, removed again): 0, or -1
 * with dlq_archive_errmsg() saying why. A consumer whose batch failed
 * waits for this before it takes deliveries again. */
int	dlq_archive_probe(struct dlq_archive *, size_t bytes);

/* Calls `each` with the failure signatures the archive holds, in order,
 * at most `max` of them: one seek of the signature index each, however
 * many records share one. Returns how many, or -1 on error. */
int	dlq_archive_signatures(struct dlq_archive *, int max,
	    void (*each)(void *ctx, const char *signature), void *ctx);

#endif
