/* sqlite.h - the SQLite backend's own: what its files share and no
 * other module sees (the raw connection of a handle, statement helpers,
 * the meta table, transactions, walks over the records). */
#ifndef DLQ_SQLITE_H
#define DLQ_SQLITE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "archive.h"

/* The connection of a handle. */
sqlite3	*dlq_archive_db(struct dlq_archive *);

/* SQLite's message for the last error on `db`, for a handle of the
 * archive (the case queries, replay); valid until the calling thread's
 * next call. A damaged file (SQLITE_CORRUPT) says so, and that retrying
 * will not mend it: the runbook's "A damaged archive" says what will. */
const char *dlq_archive_sqlite_errmsg(sqlite3 *);

/* Column `col` of the statement's row as text; "" for NULL. */
const char *dlq_archive_text(sqlite3_stmt *, int col);

/* The same on a handle of the archive, within the caller's transaction
 * (or in one of its own, not under the writer mutex): the startup's
 * refreshes of what the records hold. */
int	dlq_archive_meta_read(sqlite3 *, const char *key, int64_t *value);
int	dlq_archive_meta_write(sqlite3 *, const char *key, int64_t value);
/* Runs `run` (0 / -1) in a transaction that takes the write lock at once
 * (BEGIN IMMEDIATE): committed after a 0; rolled back after a -1 or a
 * failed BEGIN or COMMIT, with SQLite's reason in `why`. 0 / -1. */
int	dlq_archive_in_transaction(sqlite3 *, int (*run)(void *), void *arg,
	    char *why, size_t n);

/* A walk through the records by archive id, a chunk at a time: `read`
 * finds what to change among the records after id `after` (their
 * number, or -1; the last id it read in *last), `write` changes them
 * (0 / -1), until a chunk reads no record. Reading a chunk before
 * writing it: an UPDATE of the table a SELECT is still stepping through
 * is left undefined by SQLite. 0 / -1. */
int	dlq_archive_walk(int (*read)(void *, int64_t after, int64_t *last),
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
