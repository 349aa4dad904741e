/* import.h - an SQLite archive copied into a PostgreSQL archive
 * (dlq-worker --import-archive FILE), for a team that moves from one
 * worker to replicas: the records with their ids (so that lineage,
 * replay_of, stays true), their attempts, the audit and its links to
 * the records, the redrive circuits and the alert and threshold times.
 *
 * It copies table by table in chunks, each one transaction, in the order
 * of their ids: stopped anywhere (a signal, the server gone), a second
 * run goes on after the last chunk committed. The PostgreSQL archive
 * must be empty when the first run starts (import before starting the
 * replicas). At the end the rows of each table are counted on both
 * sides: the import is verified when they are equal. */
#ifndef DLQ_IMPORT_H
#define DLQ_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"

/* What is copied, in this order. */
enum dlq_import_table {
	DLQ_IMPORT_RECORDS,	/* dead_letters */
	DLQ_IMPORT_ATTEMPTS,	/* attempts */
	DLQ_IMPORT_AUDIT,	/* audit, and audit_ids from its args */
	DLQ_IMPORT_CIRCUITS,	/* redrive_circuits */
	DLQ_IMPORT_META,	/* alert_sent:*, alert_since:*,
				 * threshold_fired:* of archive_meta */
	DLQ_IMPORT_TABLES
};

/* The keys of archive_meta copied (portable SQL). */
#define DLQ_IMPORT_META_KEYS	"(key LIKE 'alert_sent:%' OR"		\
	" key LIKE 'alert_since:%' OR key LIKE 'threshold_fired:%')"

/* The table's name (in both archives). */
const char *dlq_import_table_name(enum dlq_import_table);

/* Copies the SQLite archive at `path` into the PostgreSQL archive of
 * c->archive_url, saying what it does on stdout; an exit code:
 * DLQ_EXIT_OK when every table counts the same on both sides. */
int	dlq_archive_import(const struct dlq_config *c, const char *path);

/* The seam's operations for it (backends.c): the SQLite side reads a
 * file opened read-only, the PostgreSQL side writes. */
struct dlq_export;
struct dlq_archive;

/* NULL with why in err[n]: not an archive, or of another schema than
 * this program's (a worker of this release migrates it at its start). */
struct dlq_export *dlq_archive_export_open(const char *path, char *err,
	    size_t n);
void	dlq_archive_export_close(struct dlq_export *);
/* Appends the rows of `t` after key `after`, a chunk of them, as a JSON
 * array of objects whose keys are PostgreSQL's columns, text made valid
 * (bytea as "\x..."); *last: the last key. The number of rows, 0 at the
 * end, -1 on error (err). */
int	dlq_archive_export_rows(struct dlq_export *, enum dlq_import_table t,
	    int64_t after, struct dlq_buf *json, int64_t *last);
/* Rows of `t` in the file; -1 on error. */
int64_t	dlq_archive_export_count(struct dlq_export *, enum dlq_import_table t);
const char *dlq_archive_export_errmsg(const struct dlq_export *);

/* PostgreSQL: 0 when an import may begin or go on (the archive is
 * empty, or holds an import begun before), -1 with why in err[n]. */
int	dlq_archive_import_begin(struct dlq_archive *, char *err, size_t n);
/* The last key of `t` copied already (0: none); -1 on error. */
int64_t	dlq_archive_import_after(struct dlq_archive *, enum dlq_import_table t);
/* Writes a chunk (dlq_archive_export_rows' JSON) in one transaction;
 * rows there already are left as they are. 0 / -1 */
int	dlq_archive_import_rows(struct dlq_archive *, enum dlq_import_table t,
	    const char *json);
/* After the last chunk: new ids go on after the copied ones. 0 / -1 */
int	dlq_archive_import_finish(struct dlq_archive *);
/* Rows of `t` in the archive; -1 on error. */
int64_t	dlq_archive_import_count(struct dlq_archive *, enum dlq_import_table t);

#endif
