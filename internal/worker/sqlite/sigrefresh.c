/* sigrefresh.c - the archived records' failure signatures, computed again
 * when a release reads error texts better. */
#include "sigrefresh.h"
#include "sqlite.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "archive.h"
#include "buf.h"
#include "log.h"
#include "signature.h"

#define VERSION_KEY	"signature_version"
/* records read, then changed, at a time (dlq_sqlite_walk) */
#define CHUNK		1000

struct change {
	int64_t	id;
	char	sig[DLQ_SIGNATURE_ID_LEN + 1];
};

struct refresh {
	sqlite3		*db;
	sqlite3_stmt	*read;
	sqlite3_stmt	*write;
	struct dlq_buf	 norm;
	struct change	 changes[CHUNK];
	int64_t		 from;		/* the version noted before */
	int64_t		 records;
	int64_t		 changed;
};

/* The version noted in archive_meta; 0 when none is (an archive of
 * before DLQ_SIGNATURE_VERSION, or a new one); -1 on error. */
static int64_t
noted_version(sqlite3 *db)
{
	int64_t v = 0;

	return dlq_sqlite_meta_read(db, VERSION_KEY, &v) == -1 ? -1 : v;
}

/* The records after archive id `after`, up to CHUNK: the ones whose
 * signature differs from what it is now go into r->changes. Their
 * number, the last id read in *last; -1 on error. */
static int
read_chunk(void *arg, int64_t after, int64_t *last)
{
	struct refresh *r = arg;
	char sig[DLQ_SIGNATURE_ID_LEN + 1];
	const char *error;
	int n = 0, rc;

	sqlite3_reset(r->read);
	sqlite3_bind_int64(r->read, 1, after);
	sqlite3_bind_int(r->read, 2, CHUNK);
	while ((rc = sqlite3_step(r->read)) == SQLITE_ROW) {
		*last = sqlite3_column_int64(r->read, 0);
		error = dlq_sqlite_text(r->read, 4);
		dlq_buf_reset(&r->norm);
		dlq_signature_normalize(error, strlen(error), &r->norm);
		dlq_signature_id(dlq_signature_hash(
		    dlq_sqlite_text(r->read, 1), dlq_sqlite_text(r->read, 2),
		    dlq_sqlite_text(r->read, 3),
		    r->norm.data != NULL ? r->norm.data : ""), sig);
		r->records++;
		if (strcmp(sig, dlq_sqlite_text(r->read, 5)) != 0) {
			r->changes[n].id = *last;
			memcpy(r->changes[n].sig, sig, sizeof(sig));
			n++;
		}
	}
	return rc == SQLITE_DONE ? n : -1;
}

static int
write_changes(void *arg, int n)
{
	struct refresh *r = arg;
	int i;

	for (i = 0; i < n; i++) {
		sqlite3_reset(r->write);
		sqlite3_bind_text(r->write, 1, r->changes[i].sig, -1,
		    SQLITE_STATIC);
		sqlite3_bind_int64(r->write, 2, r->changes[i].id);
		if (sqlite3_step(r->write) != SQLITE_DONE)
			return -1;
		r->changed++;
	}
	return 0;
}

/* Every record, chunk by chunk. */
static int
refresh_all(struct refresh *r)
{
	if (sqlite3_prepare_v2(r->db, "SELECT id, queue, reason, class, error,"
	    " signature FROM dead_letters WHERE id > ?1 ORDER BY id LIMIT ?2",
	    -1, &r->read, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, "UPDATE dead_letters SET signature = ?1"
	    " WHERE id = ?2", -1, &r->write, NULL) != SQLITE_OK)
		return -1;
	return dlq_sqlite_walk(read_chunk, write_changes, r);
}

/* In the write transaction: the version read again (handles opening at
 * once refresh once), and when older, every record, then the version
 * noted. */
static int
refresh_older(void *arg)
{
	struct refresh *r = arg;

	if ((r->from = noted_version(r->db)) == -1)
		return -1;
	if (r->from >= DLQ_SIGNATURE_VERSION)
		return 0;
	if (refresh_all(r) == -1)
		return -1;
	return dlq_sqlite_meta_write(r->db, VERSION_KEY,
	    DLQ_SIGNATURE_VERSION);
}

static void
log_refreshed(const struct refresh *r, const char *path, int64_t ms)
{
	struct dlq_buf line = { 0 };

	if (dlq_log_begin(&line, DLQ_LOG_INFO, "signatures_refreshed")) {
		dlq_log_str(&line, "path", path);
		dlq_log_int(&line, "from", r->from);
		dlq_log_int(&line, "to", DLQ_SIGNATURE_VERSION);
		dlq_log_int(&line, "records", r->records);
		dlq_log_int(&line, "changed", r->changed);
		dlq_log_int(&line, "ms", ms);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
}

int
dlq_sqlite_sigrefresh_run(struct dlq_sqlite *archive, const char *path)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	struct refresh *r;
	int64_t t0 = dlq_now_ms(), from;
	char why[256];
	int rc = -1;

	if ((from = noted_version(db)) == -1)
		return -1;
	if (from >= DLQ_SIGNATURE_VERSION)
		return 0;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return -1;
	r->db = db;
	dlq_buf_init(&r->norm);
	if (dlq_sqlite_in_transaction(db, refresh_older, r, why,
	    sizeof(why)) == -1) {
		dlq_log(DLQ_LOG_WARN, "signatures_refresh_failed", "path", path,
		    "error", why, NULL);
		goto out;
	}
	rc = 0;
	if (r->records > 0)
		log_refreshed(r, path, dlq_now_ms() - t0);
out:
	sqlite3_finalize(r->read);
	sqlite3_finalize(r->write);
	dlq_buf_release(&r->norm);
	free(r);
	return rc;
}
