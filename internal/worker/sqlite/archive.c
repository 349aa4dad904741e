/* archive.c - opening the archive, its transactions and the insert path.
 *
 * One prepared insert per handle, bound per dead letter: no SQL is parsed
 * on the hot path. A record is kept small, as every byte of it is written
 * twice (WAL and checkpoint) with the commit that the ack waits for: the
 * headers are stored once, as the raw AMQP table (a replay sends back
 * exactly the types that arrived), and rendered as JSON when read (SQL
 * function dlq_headers_json); the how-to-fix hint, one of a few texts, is
 * stored once in `hints` and referred to by id. Records of before schema
 * 6 keep their headers_json and hint columns, which the queries prefer. */
#include "archive.h"
#include "sqlite.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amqp.h"
#include "log.h"
#include "parentdir.h"
#include "redact.h"
#include "record.h"
#include "vfs.h"

#define ARCHIVE_DIR_MODE 0750	/* a new archive's directory: the worker's */
#define PROBE_KEY	"write_probe"	/* dlq_sqlite_probe(), removed after */
/* Broker and worker clocks may disagree: deaths this much later than
 * the upgrade are still looked up by the old fingerprint as well. */
#define LEGACY_MARGIN_S	(24 * 3600)
/* A payload this large is written into its record after the insert
 * (sqlite3_blob_write, page by page through the cache) rather than bound
 * to it: SQLite would first build the whole record in memory, a third
 * copy of the body next to rabbitmq-c's frames and its message. Only
 * where the payload is the record's last column (schema 10 on; a later
 * schema must keep it there): SQLite keeps a trailing zeroblob as a
 * count, any other it fills in memory. */
#define STREAM_PAYLOAD_BYTES	(1024 * 1024)

static const char INSERT_SQL[] =
	"INSERT INTO dead_letters (fingerprint, dlq, queue, exchange,"
	" routing_keys, message_id, correlation_id, type, content_type,"
	" content_encoding, timestamp, app_id, delivery_mode, priority,"
	" expiration, user_id, reply_to, headers_amqp, x_death, reason,"
	" retry_count, delivery_count, error, class, signature, hint_id,"
	" payload, payload_bytes, payload_sha256, received_at, replay_of,"
	" replay_count)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
	" ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28,"
	" ?29, ?30, ?31, ?32) ON CONFLICT (fingerprint) DO NOTHING";

/* Whether the archive holds records of before schema 5, and until when
 * they were written (archive_meta). */
static int
read_legacy_until(struct dlq_sqlite *a)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(a->db, "SELECT value FROM archive_meta WHERE"
	    " key = '" LEGACY_KEY "'", -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW) {
		a->has_legacy = true;
		a->legacy_until = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	return 0;
}

int
dlq_sqlite_meta_read(sqlite3 *db, const char *key, int64_t *value)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT value FROM archive_meta WHERE"
	    " key = ?1", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		*value = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

int
dlq_sqlite_meta_write(sqlite3 *db, const char *key, int64_t value)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, "INSERT INTO archive_meta (key, value)"
	    " VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value ="
	    " excluded.value", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, value);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int
dlq_sqlite_in_transaction(sqlite3 *db, int (*run)(void *), void *arg,
    char *why, size_t n)
{
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) ==
	    SQLITE_OK && run(arg) == 0 &&
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	/* before the rollback, which has an error of its own: none */
	snprintf(why, n, "%s", dlq_sqlite_db_errmsg(db));
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

int
dlq_sqlite_walk(int (*read)(void *, int64_t after, int64_t *last),
    int (*write)(void *, int n), void *arg)
{
	int64_t after = 0, last;
	int n;

	for (;;) {
		last = after;
		if ((n = read(arg, after, &last)) < 0 || write(arg, n) == -1)
			return -1;
		if (last == after)
			return 0;
		after = last;
	}
}

int
dlq_sqlite_meta_get(struct dlq_sqlite *a, const char *key, int64_t *value)
{
	int rc = dlq_sqlite_meta_read(a->db, key, value);

	if (rc == -1)
		dlq_sqlite_set_err(a, "archive_meta");
	return rc;
}

int
dlq_sqlite_meta_set(struct dlq_sqlite *a, const char *key, int64_t value)
{
	int rc;

	dlq_archive_writer_lock();
	rc = dlq_sqlite_meta_write(a->db, key, value);
	dlq_archive_writer_unlock();
	if (rc == -1)
		dlq_sqlite_set_err(a, "archive_meta");
	return rc;
}

int
dlq_sqlite_signatures(struct dlq_sqlite *a, int max,
    void (*each)(void *, const char *), void *ctx)
{
	sqlite3_stmt *st;
	char last[64] = "";
	int n = 0, rc = SQLITE_DONE;

	if (sqlite3_prepare_v2(a->db, "SELECT signature FROM dead_letters"
	    " WHERE signature > ?1 ORDER BY signature LIMIT 1", -1, &st,
	    NULL) != SQLITE_OK) {
		dlq_sqlite_set_err(a, "signatures");
		return -1;
	}
	while (n < max) {
		sqlite3_bind_text(st, 1, last, -1, SQLITE_STATIC);
		if ((rc = sqlite3_step(st)) != SQLITE_ROW)
			break;
		/* ids are 12 hex digits: a longer one is not ours to
		 * truncate (the next seek would find it again) */
		if (sqlite3_column_bytes(st, 0) >= (int)sizeof(last)) {
			rc = SQLITE_DONE;
			break;
		}
		snprintf(last, sizeof(last), "%s",
		    (const char *)sqlite3_column_text(st, 0));
		each(ctx, last);
		n++;
		sqlite3_reset(st);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		dlq_sqlite_set_err(a, "signatures");
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? n : -1;
}

/* dlq_headers_json(headers_amqp): the stored header table rendered as
 * JSON, as the worker logs headers; NULL for NULL (purged) or for bytes
 * that do not decode as a table. */
static void
headers_json_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	amqp_bytes_t enc;
	amqp_table_t table;
	amqp_pool_t pool;
	struct dlq_buf out;
	size_t off = 0;

	(void)argc;
	if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
		sqlite3_result_null(ctx);
		return;
	}
	enc.bytes = (void *)sqlite3_value_blob(argv[0]);
	enc.len = (size_t)sqlite3_value_bytes(argv[0]);
	init_amqp_pool(&pool, 4096);
	dlq_buf_init(&out);
	if (enc.bytes == NULL ||
	    amqp_decode_table(enc, &pool, &table, &off) != AMQP_STATUS_OK) {
		sqlite3_result_null(ctx);
	} else {
		dlq_table_json(&out, &table);
		if (out.oom)
			sqlite3_result_error_nomem(ctx);
		else
			sqlite3_result_text(ctx, out.data, (int)out.len,
			    SQLITE_TRANSIENT);
	}
	dlq_buf_release(&out);
	empty_amqp_pool(&pool);
}

/* A new archive is for the worker's user alone: it holds payloads
 * (personal data) that viewers must not read. SQLite would create it
 * 0644 less the umask; its -wal and -shm take the database file's
 * mode. An existing file keeps the mode it has (the worker warns about
 * one others can read: archive_readable). */
static int
create_private(const char *path)
{
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    S_IRUSR | S_IWUSR);
	if (fd == -1)
		return errno == EEXIST ? 0 : errno;
	close(fd);	/* an empty file is an empty database */
	return 0;
}

int
dlq_sqlite_claim(const char *path, int *fd)
{
	bool held;

	*fd = -1;
	dlq_parentdir_make(path, ARCHIVE_DIR_MODE, NULL, 0);
	if (create_private(path) != 0 ||
	    (*fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;	/* dlq_sqlite_open says why */
	if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	held = errno == EWOULDBLOCK;
	close(*fd);
	*fd = -1;
	return held ? EWOULDBLOCK : 0;
}

/* Why SQLite could not open (or write) the archive at `path`, as an
 * errno, 0 when the path is not the cause. SQLite says "unable to open
 * database file" for a missing directory, a directory and a denied
 * permission alike, and its last errno is of its fallbacks (a read-only
 * open, a journal). `created` is what creating the file met. */
static int
open_problem(const char *path, int created)
{
	struct stat st;

	if (created != 0)
		return created;		/* ENOENT, EACCES, EROFS, ENOSPC */
	if (stat(path, &st) == -1)
		return errno;
	if (S_ISDIR(st.st_mode))
		return EISDIR;
	return access(path, R_OK | W_OK) == -1 ? errno : 0;
}

/* Another program's SQLite database, given by a slip as archive.path,
 * is refused before anything in it changes (its journal mode too): a
 * database with tables is an archive only when one of them is
 * dead_letters; an empty one becomes an archive. A file SQLite cannot
 * read is left for the pragmas to name ("file is not a database"). */
static bool
foreign_database(struct dlq_sqlite *a)
{
	sqlite3_stmt *st;
	const char *name;
	size_t len;
	bool foreign = false;

	if (sqlite3_prepare_v2(a->db, "SELECT name FROM sqlite_master WHERE "
	    "type = 'table' AND NOT EXISTS (SELECT 1 FROM sqlite_master "
	    "WHERE type = 'table' AND name = 'dead_letters') ORDER BY name "
	    "LIMIT 1", -1, &st, NULL) != SQLITE_OK)
		return false;
	if (sqlite3_step(st) == SQLITE_ROW &&
	    (name = (const char *)sqlite3_column_text(st, 0)) != NULL) {
		foreign = true;
		len = (size_t)sqlite3_column_bytes(st, 0);
		len = len > 64 ? dlq_utf8_prefix(name, 64) : len;
		snprintf(dlq_sqlite_err, sizeof(dlq_sqlite_err), "open: not an archive of "
		    "dlq-monitor but another SQLite database (table %.*s, no "
		    "dead_letters), left as it is", (int)len, name);
	}
	sqlite3_finalize(st);
	return foreign;
}

/* Before SQLite initialises: no memory statistics (nothing reads them),
 * which would take a global mutex around every allocation. */
static void
configure_sqlite(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* SQL dlq_mask(text): the text masked with the configured rules, as
 * the worker masks what it prints. An error text is masked when it is
 * archived; the control queries mask it again when they show it, with
 * the rules of now: a key added to log.mask_keys, or digits masked from
 * a shorter run on, cover the records of before as well. Masking what is
 * masked changes nothing. */
static void
mask_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const struct dlq_redact *r = sqlite3_user_data(ctx);
	const unsigned char *s;
	struct dlq_buf out;
	size_t n;

	(void)argc;
	if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
		sqlite3_result_null(ctx);
		return;
	}
	s = sqlite3_value_text(argv[0]);
	n = (size_t)sqlite3_value_bytes(argv[0]);
	dlq_buf_init(&out);
	/* a masked value ("***") is at most three times the bytes it
	 * hides: nothing is cut */
	dlq_redact_text(r, s, n, 3 * n + 16, &out);
	if (out.oom)
		sqlite3_result_error_nomem(ctx);
	else
		sqlite3_result_text(ctx, out.data != NULL ? out.data : "",
		    (int)out.len, SQLITE_TRANSIENT);
	dlq_buf_release(&out);
}

/* SQLite's busy timeout (archive.busy_timeout_ms, waiting out a write
 * lock another process holds), cut short by a stop: at shutdown the
 * consumers drain what the broker had sent, and each would otherwise
 * wait the whole timeout in turn; what they cannot archive stays
 * unacked and goes back to its queue. */
static int
busy_wait(void *arg, int count)
{
	struct dlq_sqlite *a = arg;
	int64_t now = dlq_now_ms();

	if (count == 0)
		a->busy_since = now;
	if (a->no_wait || (a->stop != NULL && atomic_load(a->stop)) ||
	    now - a->busy_since >= a->busy_ms)
		return 0;
	usleep(count < 4 ? 1000u << count : 16000u);	/* 1, 2, 4, 8, 16 ms */
	return 1;
}

void
dlq_sqlite_stop_waits(struct dlq_sqlite *a, const atomic_bool *stop)
{
	a->stop = stop;
}

struct dlq_sqlite *
dlq_sqlite_open(const struct dlq_config *c)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	struct dlq_sqlite *a;
	char pragmas[192], dir_why[224];
	int created = 0, dir_err = 0, code;

	pthread_once(&once, configure_sqlite);
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	a->path = strdup(c->archive_path);
	if (dlq_record_enc_init(&a->enc) == -1)
		goto fail;
	if (strcmp(c->archive_path, ":memory:") != 0) {	/* no file */
		dir_err = dlq_parentdir_make(c->archive_path, ARCHIVE_DIR_MODE,
		    dir_why, sizeof(dir_why));
		created = create_private(c->archive_path);
	}
	if (sqlite3_open_v2(c->archive_path, &a->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
	    dlq_vfs_name()) != SQLITE_OK) {
		/* the directory, not the file SQLite could not open */
		if (created != 0 && dir_err != 0)
			snprintf(dlq_sqlite_err, sizeof(dlq_sqlite_err), "open: %s",
			    dir_why);
		else
			dlq_sqlite_set_err_sys(a, "open", open_problem(c->archive_path,
			    created));
		goto fail;
	}
	a->busy_ms = (int)c->busy_timeout_ms;
	sqlite3_busy_handler(a->db, busy_wait, a);
	if (foreign_database(a))
		goto fail;
	/* a small page cache for the readers (control, HTTP, redrive);
	 * the consumers' shared handle gets a larger one (dlq_sqlite_cache).
	 * A checkpoint every 4000 WAL pages (16 MiB) rather than SQLite's
	 * 1000: the index pages a flood rewrites in every commit are copied
	 * once per checkpoint, and each checkpoint syncs both files. */
	snprintf(pragmas, sizeof(pragmas), "PRAGMA journal_mode = WAL; "
	    "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; "
	    "PRAGMA cache_size = -256; PRAGMA wal_autocheckpoint = 4000");
	if (sqlite3_exec(a->db, pragmas, NULL, NULL, NULL) != SQLITE_OK) {
		/* e.g. "file is not a database"; "attempt to write a
		 * readonly database" when the file is not ours to write */
		code = sqlite3_errcode(a->db) & 0xff;
		dlq_sqlite_set_err_sys(a, "open", code == SQLITE_READONLY || code ==
		    SQLITE_CANTOPEN ? open_problem(c->archive_path, created) :
		    0);
		goto fail;
	}
	if (dlq_sqlite_migrate(a) == -1 || dlq_sqlite_tallies(a) == -1)
		goto fail;
	a->payload_last = dlq_sqlite_schema_version(a) >= 10;
	a->mask = (struct dlq_redact){ &c->mask_keys, c->mask_emails,
	    (int)c->mask_digits_min, 0, dlq_redact_key_starts(&c->mask_keys) };
	if (sqlite3_create_function_v2(a->db, "dlq_headers_json", 1,
	    SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
	    headers_json_fn, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_create_function_v2(a->db, "dlq_mask", 1,
	    SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, &a->mask,
	    mask_fn, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(a->db, INSERT_SQL, -1, SQLITE_PREPARE_PERSISTENT,
	    &a->insert, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(a->db, "INSERT INTO tallies VALUES (?1, ?2, ?3,"
	    " 'open', 0, ?4) ON CONFLICT DO UPDATE SET n = n + excluded.n", -1,
	    SQLITE_PREPARE_PERSISTENT, &a->tally_add, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(a->db, "INSERT INTO arrivals VALUES (?1, ?2, ?3)"
	    " ON CONFLICT DO UPDATE SET n = n + excluded.n", -1,
	    SQLITE_PREPARE_PERSISTENT, &a->arrival_add, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(a->db, "INSERT OR IGNORE INTO hints (text)"
	    " VALUES (?1)", -1, SQLITE_PREPARE_PERSISTENT, &a->hint_add,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(a->db, "SELECT id FROM hints WHERE text = ?1",
	    -1, SQLITE_PREPARE_PERSISTENT, &a->hint_find, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(a->db, "SELECT id FROM dead_letters WHERE "
	    "fingerprint = ?1 LIMIT 1", -1, SQLITE_PREPARE_PERSISTENT, &a->find,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(a->db, "SELECT id FROM dead_letters WHERE "
	    "fingerprint BETWEEN ?1 AND ?2 LIMIT 1", -1,
	    SQLITE_PREPARE_PERSISTENT, &a->find_legacy, NULL) != SQLITE_OK ||
	    read_legacy_until(a) == -1) {
		dlq_sqlite_set_err(a, "prepare");
		goto fail;
	}
	return a;
fail:
	dlq_log(DLQ_LOG_ERR, "archive_open_failed", "path", c->archive_path,
	    "error", dlq_sqlite_err[0] ? dlq_sqlite_err : "out of memory", NULL);
	dlq_sqlite_close(a);
	return NULL;
}

/* Ends a transaction for the hint ids it looked up: kept once committed
 * (a rolled-back insert of a new hint leaves no row behind); and for the
 * new records it counted (in the tallies by then, or rolled back). */
static void
settle_hints(struct dlq_sqlite *a, bool committed)
{
	size_t i;

	a->n_news = 0;
	for (i = 0; i < a->n_pending; i++) {
		if (committed && a->n_hints < HINT_CACHE)
			a->hints[a->n_hints++] = a->pending[i];
		else
			free(a->pending[i].text);
	}
	a->n_pending = 0;
}

void
dlq_sqlite_close(struct dlq_sqlite *a)
{
	if (a == NULL)
		return;
	sqlite3_finalize(a->insert);
	sqlite3_finalize(a->tally_add);
	sqlite3_finalize(a->arrival_add);
	sqlite3_finalize(a->find);
	sqlite3_finalize(a->find_legacy);
	sqlite3_finalize(a->hint_add);
	sqlite3_finalize(a->hint_find);
	sqlite3_close(a->db);
	settle_hints(a, false);
	while (a->n_hints > 0)
		free(a->hints[--a->n_hints].text);
	dlq_record_enc_release(&a->enc);
	free(a->path);
	free(a);
}

int
dlq_sqlite_cache(struct dlq_sqlite *a, int64_t kib)
{
	char sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%lld", (long long)kib);
	return dlq_sqlite_exec(a, sql);
}

void
dlq_sqlite_release_memory(struct dlq_sqlite *a)
{
	dlq_archive_writer_lock();
	sqlite3_db_release_memory(a->db);
	sqlite3_file_control(a->db, "main", DLQ_VFS_FCNTL_RELEASE, NULL);
	dlq_archive_writer_unlock();
}

/* `wait`: up to the busy timeout for a write lock another process
 * holds; else none. */
static int
begin(struct dlq_sqlite *a, bool wait)
{
	int rc;

	dlq_archive_writer_lock();
	a->no_wait = !wait;
	rc = dlq_sqlite_exec(a, "BEGIN IMMEDIATE");
	a->no_wait = false;
	if (rc == -1) {
		dlq_archive_writer_unlock();
		return -1;
	}
	a->in_tx = true;
	return 0;
}

int
dlq_sqlite_begin(struct dlq_sqlite *a)
{
	return begin(a, true);
}

int
dlq_sqlite_commit(struct dlq_sqlite *a)
{
	if (dlq_sqlite_commit_hold(a) == -1) {
		dlq_sqlite_rollback(a);
		return -1;
	}
	dlq_archive_writer_unlock();
	return 0;
}

bool
dlq_sqlite_moved(struct dlq_sqlite *a)
{
	int moved = 0, side = 0;

	if (sqlite3_file_control(a->db, "main", SQLITE_FCNTL_HAS_MOVED,
	    &moved) == SQLITE_OK && moved != 0)
		return true;
	/* SQLite's own test covers the database file only. Without the
	 * WAL, the frames not yet checkpointed are gone at a crash; a
	 * clean close still checkpoints them from the open file. Without
	 * the -shm, another process that opens the archive (a backup)
	 * makes a new one, believes itself alone, and may checkpoint and
	 * remove the WAL the worker still writes. */
	return sqlite3_file_control(a->db, "main", DLQ_VFS_FCNTL_SIDE_MOVED,
	    &side) == SQLITE_OK && side != 0;
}

static int	tally_news(struct dlq_sqlite *);

int
dlq_sqlite_commit_hold(struct dlq_sqlite *a)
{
	if (dlq_sqlite_known_damaged(a) || tally_news(a) == -1 ||
	    dlq_sqlite_exec(a, "COMMIT") == -1) {
		/* rolled back, but the turn is still the caller's: it ends
		 * it with dlq_sqlite_rollback() */
		if (!sqlite3_get_autocommit(a->db))
			sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
		settle_hints(a, false);
		return -1;
	}
	/* Committed into a file no longer at the path (deleted, or
	 * replaced; or its WAL or -shm): the next start opens what is at the path,
	 * so these records count as not written (a clean close may still
	 * checkpoint them; their redeliveries are then recognised), and
	 * their deliveries stay unacked.
	 * Checked after the commit, so that no window is left between the
	 * check and the ack. */
	if (dlq_sqlite_moved(a)) {
		snprintf(dlq_sqlite_err, sizeof(dlq_sqlite_err), "the archive file (or "
		    "its -wal or -shm) was deleted or replaced while open (the "
		    "worker exits; a restart opens the file at the path)");
		settle_hints(a, false);
		return -1;
	}
	settle_hints(a, true);
	a->in_tx = false;
	return 0;
}

void
dlq_sqlite_rollback(struct dlq_sqlite *a)
{
	if (!sqlite3_get_autocommit(a->db))
		sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
	settle_hints(a, false);
	if (a->in_tx) {
		a->in_tx = false;
		dlq_archive_writer_unlock();
	}
}

/* A write as large as `bytes` (a zero blob in archive_meta), committed
 * and removed again, in a turn of the writer mutex: it fails as a batch
 * of that size would (the write lock held elsewhere, a read-only file,
 * no space left on the disk, a file size limit). It does not wait for
 * the write lock: the caller tries again later, and a stop does not
 * queue behind the busy timeouts of every consumer's probe. */
int
dlq_sqlite_probe(struct dlq_sqlite *a, size_t bytes)
{
	sqlite3_stmt *st;
	int rc;

	/* the consumers' handle is theirs in turns only (no SQLite mutex) */
	if (begin(a, false) == -1)
		return -1;
	if (dlq_sqlite_known_damaged(a)) {
		dlq_sqlite_rollback(a);
		return -1;
	}
	rc = sqlite3_prepare_v2(a->db, "INSERT INTO archive_meta (key, value)"
	    " VALUES ('" PROBE_KEY "', zeroblob(?1)) ON CONFLICT (key) DO"
	    " UPDATE SET value = excluded.value", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)bytes);
		rc = sqlite3_step(st);
	}
	if (rc != SQLITE_DONE)
		dlq_sqlite_set_err(a, "archive_meta");
	sqlite3_finalize(st);	/* NULL when not prepared: a no-op */
	if (rc != SQLITE_DONE) {
		dlq_sqlite_rollback(a);
		return -1;
	}
	if (dlq_sqlite_commit(a) == -1)
		return -1;
	dlq_archive_writer_lock();
	rc = dlq_sqlite_exec(a, "DELETE FROM archive_meta WHERE key = '" PROBE_KEY "'");
	dlq_archive_writer_unlock();
	return rc;
}

static void
bind_str(sqlite3_stmt *st, int i, struct dlq_str s)
{
	if (s.p == NULL)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_text(st, i, s.p, (int)s.n, SQLITE_STATIC);
}

static void
bind_prop(sqlite3_stmt *st, int i, const amqp_basic_properties_t *p,
    amqp_flags_t flag, amqp_bytes_t v)
{
	if (p->_flags & flag)
		sqlite3_bind_text(st, i, v.bytes ? v.bytes : "", (int)v.len,
		    SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* Runs a bound lookup: the id in the first column of its first row, 0
 * when there is none. */
static int64_t
first_id(sqlite3_stmt *st)
{
	int64_t id = 0;

	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return id;
}

/* The id of the record holding this fingerprint (the one an insert of a
 * redelivery met), or 0. */
static int64_t
find(struct dlq_sqlite *a, const unsigned char fp[32])
{
	sqlite3_bind_blob(a->find, 1, fp, 32, SQLITE_STATIC);
	return first_id(a->find);
}

/* Looks up a record of before schema 5 whose fingerprint (the whole
 * digest) begins as `legacy` does: the new form keeps only 24 bytes of
 * it, and a test must be able to write such a record. Its id or 0. */
static int64_t
find_legacy(struct dlq_sqlite *a, const unsigned char legacy[32])
{
	unsigned char lo[32], hi[32];

	memcpy(lo, legacy, 24);
	memset(lo + 24, 0x00, 8);
	memcpy(hi, legacy, 24);
	memset(hi + 24, 0xff, 8);
	sqlite3_bind_blob(a->find_legacy, 1, lo, 32, SQLITE_STATIC);
	sqlite3_bind_blob(a->find_legacy, 2, hi, 32, SQLITE_STATIC);
	return first_id(a->find_legacy);
}

/* The id of a hint text in `hints`, added if new; -1 on error. */
static int64_t
hint_id(struct dlq_sqlite *a, const char *text)
{
	struct hint_id *cache;
	size_t i, *n;
	int64_t id = 0;

	for (i = 0; i < a->n_hints; i++)
		if (strcmp(a->hints[i].text, text) == 0)
			return a->hints[i].id;
	for (i = 0; i < a->n_pending; i++)
		if (strcmp(a->pending[i].text, text) == 0)
			return a->pending[i].id;
	sqlite3_bind_text(a->hint_add, 1, text, -1, SQLITE_STATIC);
	sqlite3_bind_text(a->hint_find, 1, text, -1, SQLITE_STATIC);
	if (sqlite3_step(a->hint_add) == SQLITE_DONE)
		id = first_id(a->hint_find);
	if (id == 0)
		dlq_sqlite_set_err(a, "hint");
	sqlite3_reset(a->hint_add);
	if (id == 0)
		return -1;
	/* inside a transaction the id holds only if it commits */
	if (sqlite3_get_autocommit(a->db)) {
		cache = a->hints;
		n = &a->n_hints;
	} else {
		cache = a->pending;
		n = &a->n_pending;
	}
	if (*n < HINT_CACHE && (cache[*n].text = strdup(text)) != NULL)
		cache[(*n)++].id = id;
	return id;
}

/* Writes the body into the zeroblob the insert of record `id` left for
 * it (STREAM_PAYLOAD_BYTES). */
static int
write_payload(struct dlq_sqlite *a, int64_t id,
    const struct dlq_dead_letter *d)
{
	sqlite3_blob *b;
	int rc;

	if (sqlite3_blob_open(a->db, "main", "dead_letters", "payload", id, 1,
	    &b) != SQLITE_OK) {
		dlq_sqlite_set_err(a, "payload");
		return -1;
	}
	rc = sqlite3_blob_write(b, d->body, (int)d->body_len, 0);
	if (rc != SQLITE_OK)
		dlq_sqlite_set_err(a, "payload");
	if (sqlite3_blob_close(b) != SQLITE_OK && rc == SQLITE_OK) {
		dlq_sqlite_set_err(a, "payload");
		rc = SQLITE_ERROR;
	}
	return rc == SQLITE_OK ? 0 : -1;
}

/* Adds this transaction's new records to the tallies and arrivals: one
 * statement per key, not a trigger per row. 0 / -1. */
static int
tally_news(struct dlq_sqlite *a)
{
	struct tally_new *t;
	int rc = 0;

	for (t = a->news; t < a->news + a->n_news && rc == 0; t++) {
		sqlite3_bind_text(a->tally_add, 1, t->dlq, -1, SQLITE_STATIC);
		sqlite3_bind_text(a->tally_add, 2, t->queue, -1, SQLITE_STATIC);
		sqlite3_bind_text(a->tally_add, 3, t->class, -1, SQLITE_STATIC);
		sqlite3_bind_int64(a->tally_add, 4, t->n);
		sqlite3_bind_int64(a->arrival_add, 1, t->minute);
		sqlite3_bind_text(a->arrival_add, 2, t->queue, -1, SQLITE_STATIC);
		sqlite3_bind_int64(a->arrival_add, 3, t->n);
		if (sqlite3_step(a->tally_add) != SQLITE_DONE ||
		    sqlite3_step(a->arrival_add) != SQLITE_DONE) {
			dlq_sqlite_set_err(a, "tallies");
			rc = -1;
		}
		sqlite3_reset(a->tally_add);
		sqlite3_reset(a->arrival_add);
	}
	a->n_news = 0;
	return rc;
}

/* Counts a new record of this transaction. */
static int
count_new(struct dlq_sqlite *a, struct dlq_str dlq, const char *queue,
    const char *class, int64_t received_ms)
{
	int64_t minute = received_ms / 60000;
	struct tally_new *t;
	char name[256];

	snprintf(name, sizeof(name), "%.*s", (int)(dlq.n < 255 ? dlq.n : 255),
	    dlq.p != NULL ? dlq.p : "");
	for (t = a->news; t < a->news + a->n_news; t++)
		if (t->minute == minute && strcmp(t->dlq, name) == 0 &&
		    strcmp(t->queue, queue) == 0 && strcmp(t->class, class) == 0) {
			t->n++;
			return 0;
		}
	if (a->n_news == TALLY_NEW_MAX && tally_news(a) == -1)
		return -1;
	t = &a->news[a->n_news++];
	memcpy(t->dlq, name, sizeof(name));
	snprintf(t->queue, sizeof(t->queue), "%s", queue);
	snprintf(t->class, sizeof(t->class), "%s", class);
	t->minute = minute;
	t->n = 1;
	return 0;
}

int64_t
dlq_sqlite_put(struct dlq_sqlite *a, const struct dlq_record *r,
    bool *duplicate)
{
	const struct dlq_dead_letter *d = r->d;
	const amqp_basic_properties_t *p = d->props;
	sqlite3_stmt *st = a->insert;
	struct dlq_record_enc *e = &a->enc;
	bool done, inserted, stream;
	int64_t id, hint = 0;

	*duplicate = false;
	dlq_record_encode(e, r);
	/* Every delivery is checked, not only those marked redelivered:
	 * after a broker crash a delivery whose ack was lost may come back
	 * unmarked. The insert below does nothing when the fingerprint is
	 * there; a dead letter that died before the upgrade to schema 5 may
	 * have been recorded with a fingerprint of the old form. */
	if (a->has_legacy && e->died <= a->legacy_until + LEGACY_MARGIN_S &&
	    (id = find_legacy(a, e->legacy)) > 0) {
		*duplicate = true;
		return id;
	}

	if (r->hint != NULL && (hint = hint_id(a, r->hint)) == -1)
		return -1;

	/* a parameter left unbound is NULL: the bindings are cleared after
	 * every insert, so nothing carries over from the last dead letter */
	sqlite3_bind_blob(st, 1, e->fingerprint, 32, SQLITE_STATIC);
	bind_str(st, 2, d->dlq);
	sqlite3_bind_text(st, 3, r->queue, -1, SQLITE_STATIC);
	if (d->n_xdeath > 0)
		bind_str(st, 4, d->xdeath[0].exchange);
	sqlite3_bind_text(st, 5, e->keys.data, (int)e->keys.len, SQLITE_STATIC);
	bind_prop(st, 6, p, AMQP_BASIC_MESSAGE_ID_FLAG, p->message_id);
	bind_prop(st, 7, p, AMQP_BASIC_CORRELATION_ID_FLAG, p->correlation_id);
	bind_prop(st, 8, p, AMQP_BASIC_TYPE_FLAG, p->type);
	bind_prop(st, 9, p, AMQP_BASIC_CONTENT_TYPE_FLAG, p->content_type);
	bind_prop(st, 10, p, AMQP_BASIC_CONTENT_ENCODING_FLAG,
	    p->content_encoding);
	if (p->_flags & AMQP_BASIC_TIMESTAMP_FLAG)
		sqlite3_bind_int64(st, 11, (sqlite3_int64)p->timestamp);
	bind_prop(st, 12, p, AMQP_BASIC_APP_ID_FLAG, p->app_id);
	if (p->_flags & AMQP_BASIC_DELIVERY_MODE_FLAG)
		sqlite3_bind_int(st, 13, p->delivery_mode);
	if (p->_flags & AMQP_BASIC_PRIORITY_FLAG)
		sqlite3_bind_int(st, 14, p->priority);
	bind_prop(st, 15, p, AMQP_BASIC_EXPIRATION_FLAG, p->expiration);
	bind_prop(st, 16, p, AMQP_BASIC_USER_ID_FLAG, p->user_id);
	bind_prop(st, 17, p, AMQP_BASIC_REPLY_TO_FLAG, p->reply_to);
	if (e->has_headers)
		sqlite3_bind_blob(st, 18, e->headers, (int)e->headers_len,
		    SQLITE_STATIC);
	sqlite3_bind_text(st, 19, r->xdeath_json->data, (int)r->xdeath_json->len,
	    SQLITE_STATIC);
	sqlite3_bind_text(st, 20, r->reason, -1, SQLITE_STATIC);
	if (d->has_retry_count)
		sqlite3_bind_int64(st, 21, d->retry_count);
	if (d->has_delivery_count)
		sqlite3_bind_int64(st, 22, d->delivery_count);
	sqlite3_bind_text(st, 23, r->error, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 24, r->class, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 25, r->signature, -1, SQLITE_STATIC);
	if (hint > 0)
		sqlite3_bind_int64(st, 26, hint);
	stream = a->payload_last && d->body_len >= STREAM_PAYLOAD_BYTES;
	if (stream)
		sqlite3_bind_zeroblob(st, 27, (int)d->body_len);
	else
		sqlite3_bind_blob(st, 27, d->body_len ? d->body : "",
		    (int)d->body_len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 28, (sqlite3_int64)d->body_len);
	sqlite3_bind_text(st, 29, e->body_hex, 64, SQLITE_STATIC);
	sqlite3_bind_int64(st, 30, r->received_ms);
	if (r->replay_of > 0)
		sqlite3_bind_int64(st, 31, r->replay_of);
	sqlite3_bind_int64(st, 32, r->replay_count);

	done = sqlite3_step(st) == SQLITE_DONE;
	inserted = done && sqlite3_changes(a->db) == 1;
	id = inserted ? sqlite3_last_insert_rowid(a->db) : -1;
	if (!done)
		dlq_sqlite_set_err(a, "insert");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (inserted && stream && write_payload(a, id, d) == -1)
		return -1;	/* the caller rolls back the record */
	if (inserted && count_new(a, d->dlq, r->queue, r->class,
	    r->received_ms) == -1)
		return -1;
	if (done && !inserted) {	/* the fingerprint is there */
		if ((id = find(a, e->fingerprint)) > 0)
			*duplicate = true;
		else
			snprintf(dlq_sqlite_err, sizeof(dlq_sqlite_err), "insert: a record "
			    "with this fingerprint was neither inserted nor "
			    "found");
	}
	return id > 0 ? id : -1;
}
