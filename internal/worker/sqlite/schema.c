/* schema.c - the archive's schema, version by version, and the
 * migration that takes an archive of any older version to this one's
 * (DLQ_ARCHIVE_SCHEMA) when it is opened. */
#include "sqlite.h"

#include <stdatomic.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "amqp.h"
#include "log.h"

static const char *const schema_v1[] = {
	"CREATE TABLE dead_letters ("
	"  id INTEGER PRIMARY KEY,"
	"  fingerprint BLOB NOT NULL,"
	"  dlq TEXT NOT NULL,"
	"  queue TEXT NOT NULL,"
	"  exchange TEXT,"
	"  routing_keys TEXT,"
	"  message_id TEXT, correlation_id TEXT, type TEXT, content_type TEXT,"
	"  content_encoding TEXT, timestamp INTEGER, app_id TEXT,"
	"  delivery_mode INTEGER, priority INTEGER, expiration TEXT,"
	"  user_id TEXT, reply_to TEXT,"
	"  headers_json TEXT, headers_amqp BLOB,"
	"  x_death TEXT, reason TEXT NOT NULL,"
	"  retry_count INTEGER, delivery_count INTEGER,"
	"  error TEXT, class TEXT NOT NULL, signature TEXT NOT NULL, hint TEXT,"
	"  payload BLOB, payload_bytes INTEGER NOT NULL, payload_sha256 TEXT,"
	"  received_at INTEGER NOT NULL,"
	"  status TEXT NOT NULL DEFAULT 'open',"
	"  owner TEXT, decision TEXT, evidence TEXT, escalate_at INTEGER,"
	"  assigned_by TEXT, assigned_at INTEGER,"
	"  resolved_by TEXT, resolved_at INTEGER, resolution TEXT,"
	"  replay_of INTEGER, replay_count INTEGER NOT NULL DEFAULT 0,"
	"  purged_at INTEGER)",
	"CREATE INDEX dead_letters_fingerprint ON dead_letters(fingerprint)",
	"CREATE INDEX dead_letters_status ON dead_letters(status, received_at)",
	"CREATE INDEX dead_letters_queue ON dead_letters(queue, received_at)",
	"CREATE INDEX dead_letters_signature ON dead_letters(signature)",
	"CREATE INDEX dead_letters_message ON dead_letters(message_id)",
	"CREATE TABLE attempts ("
	"  id INTEGER PRIMARY KEY,"
	"  dead_letter_id INTEGER NOT NULL REFERENCES dead_letters(id),"
	"  actor TEXT NOT NULL, reason TEXT, evidence TEXT, policy TEXT,"
	"  checked_at INTEGER, target TEXT, started_at INTEGER NOT NULL,"
	"  finished_at INTEGER, outcome TEXT NOT NULL, detail TEXT)",
	"CREATE INDEX attempts_dead_letter ON attempts(dead_letter_id)",
	"CREATE TABLE audit ("
	"  id INTEGER PRIMARY KEY,"
	"  at INTEGER NOT NULL, actor TEXT NOT NULL, uid INTEGER,"
	"  command TEXT NOT NULL, args TEXT, result TEXT NOT NULL)",
	"CREATE INDEX audit_at ON audit(at)",
	NULL,
};

/* v2: decision evidence has a time; escalations and redrive leave marks
 * so that each is announced once; the redrive circuit per queue. */
static const char *const schema_v2[] = {
	"ALTER TABLE dead_letters ADD COLUMN evidence_at INTEGER",
	"ALTER TABLE dead_letters ADD COLUMN escalation_noted TEXT",
	"ALTER TABLE dead_letters ADD COLUMN redrive_stopped_at INTEGER",
	"ALTER TABLE dead_letters ADD COLUMN redrive_note TEXT",
	"CREATE INDEX dead_letters_replay_of ON dead_letters(replay_of)",
	"CREATE TABLE redrive_circuits ("
	"  id INTEGER PRIMARY KEY,"
	"  queue TEXT NOT NULL, tripped_at INTEGER NOT NULL,"
	"  redriven INTEGER NOT NULL, returned INTEGER NOT NULL,"
	"  resumed_by TEXT, resumed_at INTEGER, resume_reason TEXT)",
	"CREATE INDEX redrive_circuits_queue ON redrive_circuits(queue)",
	NULL,
};

/* v3: no index on message_id: nothing looks a record up by it, and its
 * random keys cost a page write per insert. */
static const char *const schema_v3[] = {
	"DROP INDEX IF EXISTS dead_letters_message",
	NULL,
};

/* v4: the replay lineage index holds replays only: the other records
 * (nearly all) no longer pay an index insert each. Queries on replay_of
 * compare it with a value, which the partial index serves. */
static const char *const schema_v4[] = {
	"DROP INDEX IF EXISTS dead_letters_replay_of",
	"CREATE INDEX dead_letters_replay_of ON dead_letters(replay_of)"
	" WHERE replay_of IS NOT NULL",
	NULL,
};

/* v5: fingerprints begin with the death time (see fingerprint()); the
 * records already there keep theirs, and archive_meta says until when
 * a dead letter may have been recorded with one of the old form. */
static const char *const schema_v5[] = {
	"CREATE TABLE archive_meta (key TEXT PRIMARY KEY,"
	" value INTEGER NOT NULL)",
	"INSERT INTO archive_meta SELECT '" LEGACY_KEY "',"
	" CAST(strftime('%s', 'now') AS INTEGER) WHERE EXISTS"
	" (SELECT 1 FROM dead_letters)",
	NULL,
};

/* v6: smaller records. New ones leave headers_json and hint NULL: the
 * headers are rendered from headers_amqp when read, the hint is a row
 * of `hints`. The records already there are not rewritten. */
static const char *const schema_v6[] = {
	"CREATE TABLE hints (id INTEGER PRIMARY KEY, text TEXT NOT NULL"
	" UNIQUE)",
	"ALTER TABLE dead_letters ADD COLUMN hint_id INTEGER",
	NULL,
};

/* v7: fingerprints are unique. An insert meets a duplicate in the seek
 * that places its index entry, instead of a lookup before it: one walk
 * down that index per dead letter, not two. Every insert of before
 * looked first, so no fingerprint should be there twice; should one be,
 * the later records get their id appended to it, and the first record
 * stays the one a redelivery finds. */
static const char *const schema_v7[] = {
	"UPDATE dead_letters SET fingerprint = fingerprint ||"
	" CAST(printf('/%d', id) AS BLOB) WHERE fingerprint IN (SELECT"
	" fingerprint FROM dead_letters GROUP BY fingerprint HAVING"
	" count(*) > 1) AND id NOT IN (SELECT min(id) FROM dead_letters"
	" GROUP BY fingerprint HAVING count(*) > 1)",
	"DROP INDEX dead_letters_fingerprint",
	"CREATE UNIQUE INDEX dead_letters_fingerprint ON"
	" dead_letters(fingerprint)",
	NULL,
};

/* v8: time to owner stays fast in a large archive: a partial index of
 * the assigned records only, which a new record does not enter (its
 * condition costs about 600 instructions per insert in callgrind, of
 * 101 000). A million records: `stats` took 3 s, now 0.9. */
static const char *const schema_v8[] = {
	"CREATE INDEX dead_letters_assigned ON"
	" dead_letters(assigned_at, received_at) WHERE assigned_at IS NOT NULL",
	NULL,
};

/* v9: a record's audit history through an index of the ids each
 * audited request named, kept by a trigger on every insert into audit.
 * `show` read the arguments of every request ever audited: 0.45 s with
 * 50 000 requests of 100 ids, and redrive audits a claim every tick. */
static const char *const schema_v9[] = {
	"CREATE TABLE audit_ids (dead_letter_id INTEGER NOT NULL, audit_id"
	" INTEGER NOT NULL, PRIMARY KEY (dead_letter_id, audit_id))"
	" WITHOUT ROWID",
	"INSERT OR IGNORE INTO audit_ids SELECT CAST(j.value AS INTEGER), u.id"
	" FROM audit u, " AUDIT_IDS_IN("u.args"),
	"CREATE TRIGGER audit_ids_fill AFTER INSERT ON audit BEGIN"
	" INSERT OR IGNORE INTO audit_ids SELECT CAST(j.value AS INTEGER),"
	" NEW.id FROM " AUDIT_IDS_IN("NEW.args") "; END",
	NULL,
};

/* v10: the bulky columns (headers, x-death, payload) go last. A record
 * larger than about 4 KiB continues on overflow pages, and a column
 * after the payload was read by walking the whole chain: every 10 s the
 * escalation check read escalate_at and escalation_noted that way, each
 * scrape the escalation gauge, each redrive tick the status of its
 * queue's records (5 000 records of 64 KiB: 213 MiB read per check).
 * Now the case columns sit in a record's first page. The table is
 * copied once, in the migration's transaction, with foreign keys off
 * (migrate): dropping the old table would orphan `attempts`. */
#define V10_COLUMNS							\
	"id, fingerprint, dlq, queue, status, received_at, reason, class,"	\
	" signature, hint_id, retry_count, delivery_count, replay_of,"	\
	" replay_count, owner, decision, evidence, evidence_at, escalate_at,"	\
	" escalation_noted, assigned_by, assigned_at, resolved_by,"	\
	" resolved_at, resolution, purged_at, redrive_stopped_at,"	\
	" redrive_note, payload_bytes, payload_sha256, exchange,"	\
	" routing_keys, message_id, correlation_id, type, content_type,"	\
	" content_encoding, timestamp, app_id, delivery_mode, priority,"	\
	" expiration, user_id, reply_to, error, hint, x_death,"	\
	" headers_json, headers_amqp, payload"
static const char *const schema_v10[] = {
	"CREATE TABLE dead_letters_v10 ("
	"  id INTEGER PRIMARY KEY,"
	"  fingerprint BLOB NOT NULL,"
	"  dlq TEXT NOT NULL,"
	"  queue TEXT NOT NULL,"
	"  status TEXT NOT NULL DEFAULT 'open',"
	"  received_at INTEGER NOT NULL,"
	"  reason TEXT NOT NULL, class TEXT NOT NULL, signature TEXT NOT NULL,"
	"  hint_id INTEGER, retry_count INTEGER, delivery_count INTEGER,"
	"  replay_of INTEGER, replay_count INTEGER NOT NULL DEFAULT 0,"
	"  owner TEXT, decision TEXT, evidence TEXT, evidence_at INTEGER,"
	"  escalate_at INTEGER, escalation_noted TEXT,"
	"  assigned_by TEXT, assigned_at INTEGER,"
	"  resolved_by TEXT, resolved_at INTEGER, resolution TEXT,"
	"  purged_at INTEGER, redrive_stopped_at INTEGER, redrive_note TEXT,"
	"  payload_bytes INTEGER NOT NULL, payload_sha256 TEXT,"
	"  exchange TEXT, routing_keys TEXT,"
	"  message_id TEXT, correlation_id TEXT, type TEXT, content_type TEXT,"
	"  content_encoding TEXT, timestamp INTEGER, app_id TEXT,"
	"  delivery_mode INTEGER, priority INTEGER, expiration TEXT,"
	"  user_id TEXT, reply_to TEXT, error TEXT, hint TEXT,"
	"  x_death TEXT, headers_json TEXT, headers_amqp BLOB, payload BLOB)",
	"INSERT INTO dead_letters_v10 (" V10_COLUMNS ") SELECT " V10_COLUMNS
	" FROM dead_letters",
	"DROP TABLE dead_letters",
	"ALTER TABLE dead_letters_v10 RENAME TO dead_letters",
	"CREATE UNIQUE INDEX dead_letters_fingerprint ON"
	" dead_letters(fingerprint)",
	"CREATE INDEX dead_letters_status ON dead_letters(status, received_at)",
	"CREATE INDEX dead_letters_queue ON dead_letters(queue, received_at)",
	"CREATE INDEX dead_letters_signature ON dead_letters(signature)",
	"CREATE INDEX dead_letters_replay_of ON dead_letters(replay_of)"
	" WHERE replay_of IS NOT NULL",
	"CREATE INDEX dead_letters_assigned ON"
	" dead_letters(assigned_at, received_at) WHERE assigned_at IS NOT NULL",
	NULL,
};

/* Schema 10 changes the layout of dead_letters only: an archive of
 * schema 9 works as it is (more slowly with large payloads), and stays
 * so while the disk has no room for the copy (RELAYOUT_MARGIN above
 * twice its size). */
#define LAYOUT_SCHEMA	9
#define RELAYOUT_MARGIN	(64 * 1024 * 1024)

/* schemas[v] takes an archive of schema v to v + 1 */
static const char *const *const schemas[] = {
	schema_v1, schema_v2, schema_v3, schema_v4, schema_v5, schema_v6,
	schema_v7, schema_v8, schema_v9, schema_v10,
};
_Static_assert(sizeof(schemas) / sizeof(schemas[0]) == DLQ_ARCHIVE_SCHEMA,
    "one migration step per schema version");

int
dlq_sqlite_schema_version(struct dlq_sqlite *a)
{
	return (int)dlq_sqlite_pragma_int(a, "PRAGMA user_version");
}

/* Whether the file system has room for the copy of the records that
 * schema 10 makes: the table once more in the WAL, as much again for
 * the old pages SQLite zeroes as it frees them (secure delete), and a
 * margin. Unknown: yes (a full disk fails the migration cleanly). */
static bool
room_for_relayout(struct dlq_sqlite *a, int64_t *need, int64_t *avail)
{
	struct statvfs sv;
	int64_t pages = dlq_sqlite_pragma_int(a, "PRAGMA page_count");
	int64_t size = dlq_sqlite_pragma_int(a, "PRAGMA page_size");

	if (pages < 0 || size < 0 || statvfs(a->path, &sv) != 0)
		return true;
	*need = 2 * pages * size + RELAYOUT_MARGIN;
	*avail = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	return *avail >= *need;
}

static void
log_relayout_deferred(struct dlq_sqlite *a, int64_t need, int64_t avail)
{
	static atomic_bool said;	/* once, not per handle */
	struct dlq_buf line = { 0 };

	if (atomic_exchange(&said, true))
		return;
	if (dlq_log_begin(&line, DLQ_LOG_WARN, "archive_relayout_deferred")) {
		dlq_log_str(&line, "path", a->path);
		dlq_log_int(&line, "needed_bytes", need);
		dlq_log_int(&line, "free_bytes", avail);
		dlq_log_str(&line, "advice", "the archive keeps its schema 9 "
		    "layout, where reading a case reads its payload too; with "
		    "needed_bytes free on its file system, restart the worker "
		    "to upgrade it");
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
}

/* The steps from the archive's schema to DLQ_ARCHIVE_SCHEMA, in one
 * write transaction; to LAYOUT_SCHEMA only when the disk has no room for
 * schema 10's copy. The version is read again inside it: two handles
 * opening at once migrate once. `relaid`: schema 10 was made. */
static int
migrate_steps(struct dlq_sqlite *a, bool *relaid)
{
	int version, target = DLQ_ARCHIVE_SCHEMA, v, i;
	int64_t need = 0, avail = 0, t0 = dlq_now_ms();
	char sql[64];

	if (dlq_sqlite_exec(a, "BEGIN IMMEDIATE") == -1)
		return -1;
	if ((version = dlq_sqlite_schema_version(a)) == DLQ_ARCHIVE_SCHEMA)
		return dlq_sqlite_exec(a, "COMMIT");
	if (version < 0 || version > DLQ_ARCHIVE_SCHEMA) {
		if (version > DLQ_ARCHIVE_SCHEMA)
			snprintf(dlq_sqlite_err, sizeof(dlq_sqlite_err), "archive schema %d is "
			    "newer than this program (%d): it was written by a "
			    "newer dlq-worker; run that one (left as it is)",
			    version, DLQ_ARCHIVE_SCHEMA);
		goto fail;
	}
	if (version > 0 && version <= LAYOUT_SCHEMA &&
	    !room_for_relayout(a, &need, &avail)) {
		target = LAYOUT_SCHEMA;
		log_relayout_deferred(a, need, avail);
		if (version == target)
			return dlq_sqlite_exec(a, "COMMIT");
	}
	for (v = version; v < target; v++)
		for (i = 0; schemas[v][i] != NULL; i++)
			if (dlq_sqlite_exec(a, schemas[v][i]) == -1)
				goto fail;
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", target);
	if (dlq_sqlite_exec(a, sql) == -1 || dlq_sqlite_exec(a, "COMMIT") == -1)
		goto fail;
	*relaid = version > 0 && target > LAYOUT_SCHEMA;
	if (version > 0) {
		struct dlq_buf line = { 0 };

		if (dlq_log_begin(&line, DLQ_LOG_INFO, "archive_migrated")) {
			dlq_log_str(&line, "path", a->path);
			dlq_log_int(&line, "from", version);
			dlq_log_int(&line, "to", target);
			dlq_log_int(&line, "ms", dlq_now_ms() - t0);
			dlq_log_end(&line);
		}
		dlq_buf_release(&line);
	}
	return 0;
fail:
	sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

/* Brings the schema up to DLQ_ARCHIVE_SCHEMA. Foreign keys are off
 * meanwhile, as SQLite's way to rebuild a table (schema 10) asks; they
 * cannot be switched inside a transaction. */
int
dlq_sqlite_migrate(struct dlq_sqlite *a)
{
	int version, rc;
	bool relaid = false;

	if ((version = dlq_sqlite_schema_version(a)) == DLQ_ARCHIVE_SCHEMA)
		return 0;
	if (version == -1 || dlq_sqlite_exec(a, "PRAGMA foreign_keys = OFF") == -1)
		return -1;
	rc = migrate_steps(a, &relaid);
	if (dlq_sqlite_exec(a, "PRAGMA foreign_keys = ON") == -1)
		rc = -1;
	/* the copy passed through the WAL: its file goes back to empty */
	if (rc == 0 && relaid)
		sqlite3_exec(a->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL,
		    NULL, NULL);
	return rc;
}


/* The tallies and the indexes the gauges read (sqlite.h): records by
 * DLQ, queue, class, status and whether the payload was purged, and
 * arrivals by minute and queue (`stats` counts the new ones of the last
 * hour and day, and the traffic of each queue, from them). Changes of a
 * record are counted by triggers; new records by dlq_sqlite_put. */
#define TALLY_KEY(r)	r ".dlq, " r ".queue, " r ".class, " r ".status, " \
	r ".purged_at IS NOT NULL"
#define TALLY_IS(r)	"dlq = " r ".dlq AND queue = " r ".queue AND class = " \
	r ".class AND status = " r ".status AND purged = (" r ".purged_at" \
	" IS NOT NULL)"
/* 2: the index dead_letters_dlq_status too */
#define TALLIES_VERSION	"2"
#define TALLIES_TABLE	"CREATE TABLE IF NOT EXISTS tallies (dlq TEXT NOT NULL," \
	" queue TEXT NOT NULL, class TEXT NOT NULL, status TEXT NOT NULL," \
	" purged INTEGER NOT NULL, n INTEGER NOT NULL," \
	" PRIMARY KEY (dlq, queue, class, status, purged)) WITHOUT ROWID"
#define ARRIVALS_TABLE	"CREATE TABLE IF NOT EXISTS arrivals" \
	" (minute INTEGER NOT NULL, queue TEXT NOT NULL, n INTEGER NOT NULL," \
	" PRIMARY KEY (minute, queue)) WITHOUT ROWID"
static const char *const tallies_sql[] = {
	"DELETE FROM tallies",
	"INSERT INTO tallies SELECT dlq, queue, class, status,"
	" purged_at IS NOT NULL, count(*) FROM dead_letters"
	" GROUP BY 1, 2, 3, 4, 5",
	"DELETE FROM arrivals",
	"INSERT INTO arrivals SELECT received_at / 60000, queue, count(*)"
	" FROM dead_letters WHERE received_at >= (CAST(strftime('%s', 'now')"
	" AS INTEGER) - 2 * 86400) * 1000 GROUP BY 1, 2",
	"CREATE TRIGGER IF NOT EXISTS tallies_delete AFTER DELETE ON"
	" dead_letters BEGIN UPDATE tallies SET n = n - 1 WHERE "
	TALLY_IS("old") "; END",
	"CREATE TRIGGER IF NOT EXISTS tallies_update AFTER UPDATE OF dlq,"
	" queue, class, status, purged_at ON dead_letters WHEN old.dlq IS NOT"
	" new.dlq OR old.queue IS NOT new.queue OR old.class IS NOT new.class"
	" OR old.status IS NOT new.status OR (old.purged_at IS NULL) IS NOT"
	" (new.purged_at IS NULL) BEGIN UPDATE tallies SET n = n - 1 WHERE "
	TALLY_IS("old") "; INSERT INTO tallies VALUES (" TALLY_KEY("new")
	", 1) ON CONFLICT DO UPDATE SET n = n + 1; END",

	"CREATE INDEX IF NOT EXISTS dead_letters_redrive_stopped ON"
	" dead_letters(redrive_stopped_at) WHERE redrive_stopped_at IS NOT"
	" NULL",
	/* open records with an owner: none unless an older worker made
	 * them (an owner makes a record assigned) */
	"CREATE INDEX IF NOT EXISTS dead_letters_open_owned ON"
	" dead_letters(received_at) WHERE status = 'open' AND owner IS NOT"
	" NULL",
	/* the oldest unresolved record of each DLQ: a seek per DLQ and
	 * status for /metrics (the tallies say which are unresolved) */
	"CREATE INDEX IF NOT EXISTS dead_letters_dlq_status ON"
	" dead_letters(dlq, status, received_at)",
	/* the last: it says the others are there, as of this version
	 * (TALLIES_VERSION). (A new record is counted by the worker's
	 * insert, per batch, not by a trigger: a trigger costs 10 µs or
	 * more for each row.) */
	"INSERT OR REPLACE INTO archive_meta VALUES ('tallies', "
	TALLIES_VERSION ")",
	NULL,
};

/* 1 when the tallies are kept: made, their triggers there (schema 10's
 * relayout drops them with the table; an archive rebuilt by
 * scripts/archive-repair.sh loses the mark), and counting every record
 * (an older dlq-worker, run in between, inserted records it did not
 * count): one count of the records per open, 0.1 s for a million. */
static int
tallies_kept(struct dlq_sqlite *a)
{
	int64_t made = dlq_sqlite_pragma_int(a, "SELECT count(*) FROM"
	    " sqlite_master WHERE type = 'table' AND name = 'tallies'");

	if (made != 1)
		return made == 0 ? 0 : -1;
	return (int)dlq_sqlite_pragma_int(a, "SELECT (SELECT count(*) FROM"
	    " archive_meta WHERE key = 'tallies' AND value >= "
	    TALLIES_VERSION ") AND (SELECT count(*) FROM"
	    " sqlite_master WHERE type = 'trigger' AND name ="
	    " 'tallies_update') AND (SELECT coalesce(sum(n), 0) FROM tallies)"
	    " = (SELECT count(*) FROM dead_letters)");
}

int
dlq_sqlite_tallies(struct dlq_sqlite *a)
{
	int i, kept;

	/* the tables, which the insert's statements name, first: made
	 * without reading a record */
	if (dlq_sqlite_exec(a, TALLIES_TABLE) == -1 ||
	    dlq_sqlite_exec(a, ARRIVALS_TABLE) == -1)
		return -1;
	if (tallies_kept(a) != 0)
		return 0;
	/* counted once, however many handles open at once. A damaged
	 * archive (a count that cannot read it) opens as before: its
	 * writes say what is wrong, and the next start counts again */
	if (dlq_sqlite_exec(a, "BEGIN IMMEDIATE") == -1)
		return 0;
	if ((kept = tallies_kept(a)) != 0) {
		sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL);
		return 0;
	}
	for (i = 0; tallies_sql[i] != NULL; i++)
		if (dlq_sqlite_exec(a, tallies_sql[i]) == -1) {
			sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
			return 0;
		}
	if (dlq_sqlite_exec(a, "COMMIT") == -1)
		sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
	return 0;
}
