/* sqlite.h - the SQLite backend's own: what its files share and no
 * other module sees (the raw connection of a handle, statement helpers,
 * the meta table, transactions, walks over the records). */
#ifndef DLQ_SQLITE_H
#define DLQ_SQLITE_H

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "archive.h"
#include "sqlitedb.h"
#include "buf.h"
#include "record.h"
#include "redact.h"

#define HINT_CACHE	64	/* hint texts whose id a handle remembers */
/* The oldest record of status `s`, as a row (t): a seek of the status
 * index. */
#define OLDEST(s)	"SELECT (SELECT min(received_at) FROM dead_letters" \
	" WHERE status = '" s "') t"
/* The record ids an audited request named (its args' "ids"), as j.value:
 * what the table audit_ids holds for it, filled by a trigger (schema 9)
 * and taken away with the request (audit retention). */
#define AUDIT_IDS_IN(args)						\
	"json_each(CASE WHEN json_valid(" args ") THEN " args " END,"	\
	" '$.ids') j WHERE j.type IN ('integer', 'real')"
/* archive_meta: until when records of before schema 5 were written */
#define LEGACY_KEY	"legacy_fingerprints_until"
#define DLQ_SQLITE_ERR_MAX	512

struct hint_id {
	char		*text;
	int64_t		 id;
};

/* New records of a transaction by DLQ, queue, class and minute, added to
 * the tallies once per key when it commits (schema.c). */
#define TALLY_NEW_MAX	16
struct tally_new {
	char		 dlq[256], queue[256], class[16];
	int64_t		 minute, n;
};

struct dlq_sqlite {
	sqlite3		*db;
	sqlite3_stmt	*insert;
	sqlite3_stmt	*tally_add;	/* new records into the tallies */
	sqlite3_stmt	*arrival_add;	/* ... and the arrivals */
	struct tally_new news[TALLY_NEW_MAX];
	size_t		 n_news;
	sqlite3_stmt	*find;		/* by fingerprint */
	sqlite3_stmt	*find_legacy;	/* by a fingerprint of before v5 */
	sqlite3_stmt	*hint_add;	/* INSERT OR IGNORE INTO hints */
	sqlite3_stmt	*hint_find;	/* its id */
	struct hint_id	 hints[HINT_CACHE];	/* committed ids only */
	size_t		 n_hints;
	struct hint_id	 pending[HINT_CACHE];	/* ids of this transaction */
	size_t		 n_pending;
	bool		 has_legacy;	/* records of before v5 are there */
	bool		 payload_last;	/* the record's last column (v10) */
	int64_t		 legacy_until;	/* ... for deaths up to this time */
	char		*path;
	struct dlq_record_enc enc;	/* fingerprint and encodings, reused */
	bool		 in_tx;		/* began: holds the writer mutex */
	int		 busy_ms;	/* archive.busy_timeout_ms */
	bool		 no_wait;	/* this statement: not even that */
	int64_t		 busy_since;	/* busy_wait(): the first try */
	const atomic_bool *stop;	/* dlq_sqlite_stop_waits() */
	struct dlq_redact mask;		/* SQL dlq_mask(): the config's rules */
	char		 damaged[512];	/* the first SQLITE_CORRUPT's error */
};

/* The last error of the calling thread (dlq_sqlite_errmsg); a
 * handle shared by consumers (under the writer mutex) must not hand one
 * thread another's error. */
extern _Thread_local char dlq_sqlite_err[DLQ_SQLITE_ERR_MAX];

/* Keeps what failed and why: SQLite's message, with `sys` (an errno or
 * 0) after it; the first damage met is kept for known_damaged. */
void	dlq_sqlite_set_err_sys(struct dlq_sqlite *, const char *what, int sys);
/* The same with the errno of a failed write, sync or read, from the
 * archive's VFS, else SQLite's. */
void	dlq_sqlite_set_err(struct dlq_sqlite *, const char *what);
/* True, with the error said again, once a statement on this handle met
 * a damaged page: nothing commits into that file any more. */
bool	dlq_sqlite_known_damaged(struct dlq_sqlite *);
/* Runs `sql` (no rows); 0, or -1 with the error kept. */
int	dlq_sqlite_exec(struct dlq_sqlite *, const char *sql);
/* The number a PRAGMA answers; -1 on error. */
int64_t	dlq_sqlite_pragma_int(struct dlq_sqlite *, const char *sql);
/* The first column of the one row `sql` answers, with ?1 and ?2 (when
 * it has them) bound to a1 and a2; 0 for NULL, -1 on error. */
int64_t	dlq_sqlite_number(struct dlq_sqlite *, const char *sql, int64_t a1,
	    int64_t a2);

/* The schema version of the open file (PRAGMA user_version); -1 on
 * error (schema.c). */
int	dlq_sqlite_schema_version(struct dlq_sqlite *);
/* Brings the schema up to DLQ_ARCHIVE_SCHEMA, once however many handles
 * open at once; refuses a newer one. 0 / -1 with the error kept. */
int	dlq_sqlite_migrate(struct dlq_sqlite *);
/* Makes sure the archive keeps its tallies (records by DLQ, queue,
 * class, status and purged payload; arrivals by minute and queue), kept
 * in the transaction that changes them (new records by dlq_sqlite_put,
 * changes by triggers), and the partial indexes the gauges read: made,
 * and counted, when they are not there or do not count every record
 * (schema 10's relayout drops the triggers with the table; an older
 * dlq-worker does not count its inserts). Outside the schema's
 * versions: an older dlq-worker opens the archive as before. -1 only
 * when the tables cannot be made. */
int	dlq_sqlite_tallies(struct dlq_sqlite *);
/* Open records without an owner past `owner_sla_ms` (0: off) at
 * `now_ms`, mostly from the tallies (gauges.c); -1 on error. */
int64_t	dlq_sqlite_unowned_past_sla(struct dlq_sqlite *, int64_t now_ms,
	    int64_t owner_sla_ms);

/* SQLite's message for the last error on `db`, for a handle of the
 * archive (the case queries, replay); valid until the calling thread's
 * next call. A damaged file (SQLITE_CORRUPT) says so, and that retrying
 * will not mend it: the runbook's "A damaged archive" says what will. */
const char *dlq_sqlite_db_errmsg(sqlite3 *);

/* Column `col` of the statement's row as text; "" for NULL. */
const char *dlq_sqlite_text(sqlite3_stmt *, int col);

/* The same on a handle of the archive, within the caller's transaction
 * (or in one of its own, not under the writer mutex): the startup's
 * refreshes of what the records hold. */
int	dlq_sqlite_meta_read(sqlite3 *, const char *key, int64_t *value);
int	dlq_sqlite_meta_write(sqlite3 *, const char *key, int64_t value);
/* Runs `run` (0 / -1) in a transaction that takes the write lock at once
 * (BEGIN IMMEDIATE): committed after a 0; rolled back after a -1 or a
 * failed BEGIN or COMMIT, with SQLite's reason in `why`. 0 / -1. */
int	dlq_sqlite_in_transaction(sqlite3 *, int (*run)(void *), void *arg,
	    char *why, size_t n);

/* A walk through the records by archive id, a chunk at a time: `read`
 * finds what to change among the records after id `after` (their
 * number, or -1; the last id it read in *last), `write` changes them
 * (0 / -1), until a chunk reads no record. Reading a chunk before
 * writing it: an UPDATE of the table a SELECT is still stepping through
 * is left undefined by SQLite. 0 / -1. */
int	dlq_sqlite_walk(int (*read)(void *, int64_t after, int64_t *last),
	    int (*write)(void *, int n), void *arg);

/* The same groups, every one, as rows of a statement (NULL on error; the
 * caller finalizes it), the largest first, in these columns. */
enum dlq_group_col {
	DLQ_GROUP_SIGNATURE, DLQ_GROUP_SAMPLE_ID, DLQ_GROUP_COUNT,
	DLQ_GROUP_UNRESOLVED, DLQ_GROUP_FIRST_SEEN, DLQ_GROUP_LAST_SEEN,
	DLQ_GROUP_QUEUE, DLQ_GROUP_REASON, DLQ_GROUP_CLASS,
	DLQ_GROUP_ERROR,	/* masked with the configured rules */
	DLQ_GROUP_MESSAGE_ID, DLQ_GROUP_DLQ,
};
sqlite3_stmt *dlq_cases_group_rows(sqlite3 *, int64_t since_ms);

#endif
