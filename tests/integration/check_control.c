/* check_control.c - the control socket as the attack surface it is: what
 * local users without a role, or with too small a one, can make the
 * worker do. They connect as real other users (setuid in a child). */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_main.h"
#include "harness.h"

#define WAIT_MS	20000

/* A rig whose archive is f->db, with more `archive` settings and other
 * groups (each may be NULL). */
static void
start(struct h_rig *f, const char *archive, const char *extra)
{
	char conf[1024];

	h_share_tmpdir();	/* other users reach the socket in it */
	h_rig_name(f, "ct", 2);
	snprintf(conf, sizeof(conf), "archive = { path = \"%s\"; %s };\n%s",
	    f->db, archive ? archive : "", extra ? extra : "");
	h_rig_setup(f, conf);
	h_rig_start(f);
}

/* n messages die in queue q; returns the archive id of the last. */
static int64_t
die_in(struct h_rig *f, int q, int n, const char *stem)
{
	char id[128];
	int64_t last = -1;
	int i;

	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-%s-%d", f->prefix, stem, i);
		h_publish(f->c, f->exch, f->q[q], "{}", 2, id, NULL);
	}
	ck_assert_int_eq(h_reject(f->c, f->q[q], n, WAIT_MS), n);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-%s-%d", f->prefix, stem, i);
		last = h_archived(&f->w, id, 1, WAIT_MS);
	}
	return last;
}

/* Becomes `user` (in a child that does nothing else). */
static void
become(const char *user)
{
	struct passwd *pw = getpwnam(user);

	if (pw == NULL || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
		_exit(90);
}

static bool
send_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	for (; n > 0; p += w, n -= (size_t)w)
		if ((w = send(fd, p, n, MSG_NOSIGNAL)) <= 0)
			return false;
	return true;
}

/* As `user`, `n` drop requests of about 60 KB for record `id` on one
 * connection (a reason past the text limit, and padding), each answered
 * "permission"; exits 0 when all were. */
static pid_t
flood_as(const char *user, const char *sock, int64_t id, int n)
{
	pid_t pid = fork();
	char *req;
	size_t len;
	int fd, i;

	ck_assert_int_ge(pid, 0);
	if (pid > 0)
		return pid;
	become(user);
	if ((req = malloc(64 * 1024)) == NULL || (fd = h_control_connect(sock)) < 0)
		_exit(91);
	len = (size_t)sprintf(req, "{\"cmd\":\"drop\",\"ids\":[%lld],"
	    "\"reason\":\"", (long long)id);
	memset(req + len, 'r', 5000);
	len += 5000;
	len += (size_t)sprintf(req + len, "\",\"pad\":\"");
	memset(req + len, 'p', 55000);
	len += 55000;
	len += (size_t)sprintf(req + len, "\"}\n");
	for (i = 0; i < n; i++)
		if (!send_all(fd, req, len) ||
		    strstr(h_control_line(fd), "\"code\":\"permission\"") == NULL)
			_exit(92);
	_exit(0);
}

static int
exit_status(pid_t pid)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static off_t
file_bytes(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : 0;
}

/* The archive and its write-ahead log, as the disk holds them. */
static off_t
archive_bytes(const char *db)
{
	char wal[300];

	snprintf(wal, sizeof(wal), "%s-wal", db);
	return file_bytes(db) + file_bytes(wal);
}

static int
audit_rows_of(const char *cfg, const char *actor)
{
	cJSON *j;
	int n;

	ck_assert_int_eq(h_dlqctl(cfg, NULL, &j, (const char *[]){ "audit",
	    "--actor", actor, "--limit", "10000", NULL }), 0);
	n = cJSON_GetArraySize(j);
	cJSON_Delete(j);
	return n;
}

/* Two local users flood the socket with refused drops of 60 KB each,
 * 2 000 in all: one with no role (daemon), one a viewer (nobody). The
 * archive grows by less than 1 MiB (the viewer leaves 10 small audit
 * rows, then a log line; daemon nothing), the worker keeps draining,
 * an operator's request gets through, and the record the flood named
 * shows none of it in its history. */
START_TEST(refused_requests_cannot_fill_the_disk_or_deface_a_history)
{
	struct h_rig f;
	pid_t viewer, nobody_at_all;
	char id[24];
	off_t before, grown;
	cJSON *j, *hist;
	const cJSON *e;

	start(&f, NULL, "control = { viewers = [ \"nobody\" ]; };");
	snprintf(id, sizeof(id), "%lld", (long long)die_in(&f, 0, 1, "named"));
	before = archive_bytes(f.db);
	viewer = flood_as("nobody", h_socket(f.prefix), atoll(id), 1000);
	nobody_at_all = flood_as("daemon", h_socket(f.prefix), atoll(id), 1000);
	/* the consumers go on meanwhile */
	die_in(&f, 1, 20, "during");
	ck_assert_int_eq(exit_status(viewer), 0);
	ck_assert_int_eq(exit_status(nobody_at_all), 0);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "assign", id, "--owner", "payments", "--decision", "refund?",
	    NULL }), 0);
	grown = archive_bytes(f.db) - before;
	ck_assert_msg(grown < 1024 * 1024, "the archive grew by %lld bytes",
	    (long long)grown);

	ck_assert_int_eq(audit_rows_of(f.cfg, "nobody"), 10);
	ck_assert_int_eq(audit_rows_of(f.cfg, "daemon"), 0);
	ck_assert_int_eq(h_worker_count(&f.w, "control_refusals_not_audited"),
	    1);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    "--actor", "nobody", "--limit", "1", NULL }), 0);
	e = cJSON_GetArrayItem(j, 0);
	ck_assert_msg(cJSON_IsNull(cJSON_GetObjectItem(e, "args")),
	    "a refused request's arguments are not kept");
	ck_assert_str_eq(h_jstr(e, "result"), "refused: drop needs the "
	    "operator role; nobody is viewer");
	cJSON_Delete(j);
	/* the record's history: the operator's assign alone */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    id, NULL }), 0);
	hist = cJSON_GetObjectItem(j, "audit");
	ck_assert_int_eq(cJSON_GetArraySize(hist), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(hist, 0), "command"),
	    "assign");
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* As `user`, 8 connections, each asking ping; writes to `report` how
 * many were answered (permission: the worker took the connection) and
 * how many were turned away (too many connections), always (the parent
 * waits for it), then holds them until killed. */
static pid_t
hold_slots_as(const char *user, const char *sock, int report)
{
	pid_t pid = fork();
	int fd[8], i, counts[2] = { 0, 0 };
	const char *a;

	ck_assert_int_ge(pid, 0);
	if (pid > 0)
		return pid;
	become(user);
	for (i = 0; i < 8; i++) {
		if ((fd[i] = h_control_connect(sock)) < 0)
			continue;	/* counted as neither */
		/* one turned away may be closed before this: its one line is
		 * still there to read */
		(void)send_all(fd[i], "{\"cmd\":\"ping\"}\n", 15);
		a = h_control_line(fd[i]);
		if (strstr(a, "\"code\":\"permission\""))
			counts[0]++;
		else if (strstr(a, "too many control connections"))
			counts[1]++;
	}
	if (write(report, counts, sizeof(counts)) != sizeof(counts))
		_exit(92);
	pause();
	_exit(0);
}

/* Four other users take every connection they can (8 each): the worker
 * keeps the last 4 of its 32 for root and its own user, so an admin's
 * request is still answered. A request sent a byte at a time does not
 * hold its slot either: 5 s after its first byte it is closed. */
START_TEST(other_users_cannot_take_every_connection_nor_trickle)
{
	static const char *const users[] = { "nobody", "daemon", "bin",
	    "sys" };
	struct h_rig f;
	pid_t pid[4];
	int p[2], counts[2], taken = 0, refused = 0, i, fd;
	int64_t t0;
	const char *a;
	cJSON *j;

	start(&f, NULL, NULL);
	ck_assert_int_eq(pipe(p), 0);
	for (i = 0; i < 4; i++) {
		pid[i] = hold_slots_as(users[i], h_socket(f.prefix), p[1]);
		/* a child that died without a report fails, not hangs */
		ck_assert_msg(poll(&(struct pollfd){ p[0], POLLIN, 0 }, 1,
		    WAIT_MS) == 1, "%s did not report", users[i]);
		ck_assert_int_eq(read(p[0], counts, sizeof(counts)),
		    sizeof(counts));
		taken += counts[0];
		refused += counts[1];
	}
	ck_assert_int_eq(taken, 28);
	ck_assert_int_eq(refused, 4);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    NULL }), 0);
	cJSON_Delete(j);

	/* a byte a second: closed 5 s after the first, not kept alive */
	ck_assert_int_ge(fd = h_control_connect(h_socket(f.prefix)), 0);
	t0 = h_now_ms();
	a = "";
	for (i = 0; i < 20 && h_now_ms() - t0 < 15000; i++) {
		if (!send_all(fd, "{", 1))
			break;
		sleep(1);
	}
	a = h_control_line(fd);
	ck_assert_msg(strstr(a, "request not complete 5000 ms after its first "
	    "byte: connection closed") != NULL, "%s", a);
	ck_assert_int_lt(h_now_ms() - t0, 9000);
	close(fd);
	for (i = 0; i < 4; i++) {
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
	}
	close(p[0]);
	close(p[1]);
	h_rig_stop(&f);
}
END_TEST

/* archive.audit_retention_days: audit entries older than that go at
 * start (and daily), with their links to records, and the start says
 * how many; younger ones stay. */
START_TEST(audit_entries_expire_after_their_retention)
{
	struct h_rig f;
	char id[24], sql[200];
	sqlite3 *db;
	cJSON *j, **ev;
	int n;

	start(&f, "audit_retention_days = 1;", NULL);
	snprintf(id, sizeof(id), "%lld", (long long)die_in(&f, 0, 1, "aged"));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "assign", id, "--owner", "a", "--decision", "old", NULL }), 0);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "assign", id, "--owner", "b", "--decision", "new", NULL }), 0);
	ck_assert_int_eq(h_worker_stop(&f.w, WAIT_MS, NULL), 0);
	/* the first entry two days old */
	ck_assert_int_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	snprintf(sql, sizeof(sql), "UPDATE audit SET at = at - 2 * 86400000 "
	    "WHERE id = (SELECT min(id) FROM audit)");
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	h_rig_start(&f);
	ck_assert(h_worker_wait(&f.w, "retention_applied", 1, WAIT_MS));
	ck_assert_int_eq(audit_rows_of(f.cfg, "root"), 1);
	ck_assert_int_eq(h_db_int(f.db, "SELECT count(*) FROM audit_ids"), 1);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    id, NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "audit")),
	    1);
	cJSON_Delete(j);
	ev = h_worker_events(&f.w, "retention_applied", &n);
	ck_assert_int_eq(h_jnum(ev[0], "audit_deleted"), 1);
	ck_assert_int_eq(h_jnum(ev[0], "audit_days"), 1);
	h_events_free(ev, n);
	h_rig_stop(&f);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("control");
	TCase *tc = tcase_create("control");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, refused_requests_cannot_fill_the_disk_or_deface_a_history);
	tcase_add_test(tc, other_users_cannot_take_every_connection_nor_trickle);
	tcase_add_test(tc, audit_entries_expire_after_their_retention);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
