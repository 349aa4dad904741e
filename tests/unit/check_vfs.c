/* check_vfs.c - the archive's VFS: a commit reaches the kernel in a few
 * large writes, and nothing SQLite counts on changes: other connections
 * see every commit, a killed writer loses no committed row, a write that
 * fails fails the commit. Real SQLite files in a temporary directory;
 * write calls counted from /proc/self/io (Check runs each test in its own
 * process). */
#include <check.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_io.h"
#include "../check_main.h"
#include "vfs.h"

static char dir[64], path[96];

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/dlq-check-vfs-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/archive.db", dir);
}

static void
teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Opens `path` like the archive does: WAL, synchronous=FULL. */
static sqlite3 *
open_db(const char *vfs)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE, vfs), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "PRAGMA journal_mode = WAL;"
	    " PRAGMA synchronous = FULL; CREATE TABLE IF NOT EXISTS t"
	    " (n INTEGER PRIMARY KEY, k BLOB, v BLOB);"
	    " CREATE INDEX IF NOT EXISTS t_k ON t(k)", NULL, NULL, NULL),
	    SQLITE_OK);
	return db;
}

/* Rows first..first+count-1 in one transaction: random keys under an
 * index, so that the commit writes pages all over the file. */
static int
insert_rows(sqlite3 *db, int first, int count, int bytes)
{
	char sql[256];
	int rc;

	snprintf(sql, sizeof(sql), "BEGIN; WITH RECURSIVE c(i) AS (SELECT %d"
	    " UNION ALL SELECT i + 1 FROM c WHERE i < %d) INSERT INTO t"
	    " SELECT i, randomblob(16), randomblob(%d) FROM c; COMMIT",
	    first, first + count - 1, bytes);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
		return SQLITE_OK;
	rc = sqlite3_extended_errcode(db);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

static long long
query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	long long v;

	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void
assert_intact(sqlite3 *db)
{
	sqlite3_stmt *st;

	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1,
	    &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
}

static long long
commit_write_calls(const char *vfs)
{
	sqlite3 *db = open_db(vfs);
	long long before, after;
	int rc;

	ck_assert_int_eq(insert_rows(db, 1, 10, 100), SQLITE_OK);
	before = check_write_calls();
	rc = insert_rows(db, 11, 300, 1000);
	after = check_write_calls();
	ck_assert_int_eq(rc, SQLITE_OK);
	ck_assert_int_ge(before, 0);
	ck_assert_int_eq(query_int(db, "SELECT count(*) FROM t"), 310);
	sqlite3_close(db);
	return after - before;
}

START_TEST(a_commit_reaches_the_kernel_in_a_few_writes)
{
	long long plain, held;

	ck_assert_ptr_nonnull(dlq_vfs_name());
	plain = commit_write_calls(NULL);
	teardown();
	setup();
	held = commit_write_calls(dlq_vfs_name());
	/* ~100 frames of 4 KiB: two calls each by default (212 here), one
	 * per 128 KiB run through the VFS (4); valgrind adds its own */
	ck_assert_int_ge(plain, 150);
	ck_assert_int_le(held * 10, plain);
}
END_TEST

START_TEST(every_commit_and_checkpoint_is_seen_by_other_connections)
{
	sqlite3 *w = open_db(dlq_vfs_name()), *plain = open_db(NULL),
	    *other = open_db(dlq_vfs_name());
	int i;

	for (i = 0; i < 60; i++) {
		ck_assert_int_eq(insert_rows(w, i * 20 + 1, 20, 700),
		    SQLITE_OK);
		if (i % 7 == 6)
			ck_assert_int_eq(sqlite3_exec(w, "PRAGMA"
			    " wal_checkpoint(PASSIVE)", NULL, NULL, NULL),
			    SQLITE_OK);
		ck_assert_int_eq(query_int(plain, "SELECT count(*) FROM t"),
		    (i + 1) * 20);
		ck_assert_int_eq(query_int(other, "SELECT max(n) FROM t"),
		    (i + 1) * 20);
	}
	/* the reader's own writes go through as well */
	ck_assert_int_eq(insert_rows(other, 5000, 5, 10), SQLITE_OK);
	ck_assert_int_eq(query_int(w, "SELECT count(*) FROM t"), 1205);
	ck_assert_int_eq(sqlite3_exec(w, "PRAGMA wal_checkpoint(TRUNCATE)",
	    NULL, NULL, NULL), SQLITE_OK);
	assert_intact(plain);
	sqlite3_close(w);
	sqlite3_close(other);
	sqlite3_close(plain);
}
END_TEST

START_TEST(a_killed_writer_loses_no_committed_row)
{
	int fds[2], status, n, last = 0;
	pid_t pid;
	sqlite3 *db;

	ck_assert_int_eq(pipe(fds), 0);
	if ((pid = fork()) == 0) {
		close(fds[0]);
		db = open_db(dlq_vfs_name());
		sqlite3_exec(db, "PRAGMA wal_autocheckpoint = 50", NULL, NULL,
		    NULL);
		for (n = 1;; n++) {
			if (insert_rows(db, n * 10, 10, 900) != SQLITE_OK)
				_exit(1);
			/* committed: tell the parent */
			if (write(fds[1], &n, sizeof(n)) != sizeof(n))
				_exit(1);
		}
	}
	close(fds[1]);
	while (last < 300 && read(fds[0], &n, sizeof(n)) == sizeof(n))
		last = n;
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	while (read(fds[0], &n, sizeof(n)) == sizeof(n))
		last = n;
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_ge(last, 300);

	db = open_db(NULL);
	assert_intact(db);
	/* every reported commit is there, whole; at most one more */
	n = (int)query_int(db, "SELECT count(*) FROM t") / 10;
	ck_assert_int_ge(n, last);
	ck_assert_int_le(n, last + 1);
	ck_assert_int_eq(query_int(db, "SELECT count(*) FROM t"), n * 10);
	ck_assert_int_eq(query_int(db, "SELECT max(n) FROM t"), n * 10 + 9);
	sqlite3_close(db);
}
END_TEST

START_TEST(a_write_that_fails_fails_the_commit)
{
	sqlite3 *w = open_db(dlq_vfs_name()), *plain = open_db(NULL);
	struct rlimit lim, saved;
	struct stat st;
	char wal[128];
	int rc;

	ck_assert_int_eq(insert_rows(w, 1, 50, 500), SQLITE_OK);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	ck_assert_int_eq(stat(wal, &st), 0);
	/* files may not grow by more than 64 KiB: the commit's runs fail */
	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
	lim = saved;
	lim.rlim_cur = (rlim_t)st.st_size + 64 * 1024;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	rc = insert_rows(w, 51, 400, 1000);
	ck_assert_int_ne(rc, SQLITE_OK);
	ck_assert_msg((rc & 0xff) == SQLITE_FULL || (rc & 0xff) ==
	    SQLITE_IOERR, "commit failed with %d", rc);
	ck_assert_int_eq(query_int(plain, "SELECT count(*) FROM t"), 50);

	/* room again: the same connection commits, nothing was lost */
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
	ck_assert_int_eq(insert_rows(w, 51, 400, 1000), SQLITE_OK);
	ck_assert_int_eq(query_int(plain, "SELECT count(*) FROM t"), 450);
	assert_intact(plain);
	sqlite3_close(w);
	sqlite3_close(plain);
}
END_TEST

START_TEST(the_memory_of_the_runs_is_given_back)
{
	sqlite3 *w = open_db(dlq_vfs_name());

	ck_assert_int_eq(insert_rows(w, 1, 100, 1000), SQLITE_OK);
	ck_assert_int_eq(sqlite3_file_control(w, "main",
	    DLQ_VFS_FCNTL_RELEASE, NULL), SQLITE_OK);
	/* and taken again by the next write */
	ck_assert_int_eq(insert_rows(w, 101, 100, 1000), SQLITE_OK);
	ck_assert_int_eq(query_int(w, "SELECT count(*) FROM t"), 200);
	sqlite3_close(w);
}
END_TEST

static Suite *
vfs_suite(void)
{
	Suite *s = suite_create("vfs");
	TCase *tc = tcase_create("vfs");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_commit_reaches_the_kernel_in_a_few_writes);
	tcase_add_test(tc, every_commit_and_checkpoint_is_seen_by_other_connections);
	tcase_add_test(tc, a_killed_writer_loses_no_committed_row);
	tcase_add_test(tc, a_write_that_fails_fails_the_commit);
	tcase_add_test(tc, the_memory_of_the_runs_is_given_back);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(vfs_suite)
