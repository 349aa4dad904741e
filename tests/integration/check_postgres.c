/* check_postgres.c - the PostgreSQL archive with a real server (scripts/
 * postgres.sh, started by scripts/test.sh): replicas that compete for
 * one DLQ and archive each dead letter once, a replica killed mid-batch,
 * the server restarted mid-drain or frozen, wrong credentials and a
 * missing database. */
#include <check.h>
#include <cjson/cJSON.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_main.h"
#include "harness.h"
#include "receiver.h"

#define WAIT_MS	20000

/* A rig of one queue whose archive is a new database (`more`: more of
 * its settings; `settings`: more groups, which may name the queue with
 * %1$s); asserted, the worker not started. */
static const char *
pg_rig_with(struct h_rig *f, const char *stem, const char *more,
    const char *settings)
{
	char db[96], extra[2048], groups[1024] = "";
	const char *url;

	h_name(db, sizeof(db), stem);
	url = h_pg_database(db);
	h_rig_name(f, stem, 1);
	if (settings != NULL)
		snprintf(groups, sizeof(groups), settings, f->q[0]);
	snprintf(extra, sizeof(extra), "archive = { url = \"%s\"; %s }; %s",
	    url, more ? more : "", groups);
	h_rig_setup(f, extra);
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlq-worker"), "-c",
	    f->cfg, "--assert-only", NULL }, NULL, NULL), 0);
	return url;
}

static const char *
pg_rig(struct h_rig *f, const char *stem, const char *more)
{
	return pg_rig_with(f, stem, more, NULL);
}

/* A second worker on the rig's config: its own control socket. */
static void
start_replica(struct h_rig *f, struct h_worker *b, const char *const *env)
{
	char sock[300];
	const char *e[4] = { sock, NULL, NULL, NULL };
	int i;

	snprintf(sock, sizeof(sock), "DLQ_CONTROL_SOCKET=%s",
	    h_tmp_path("replica-b.sock"));
	for (i = 0; env != NULL && env[i] != NULL && i < 2; i++)
		e[i + 1] = env[i];
	h_worker_start(b, (const char *[]){ "-c", f->cfg, NULL }, e);
	ck_assert(h_worker_wait(b, "consumer_started", f->n, WAIT_MS));
}

static int64_t
records(const char *url, const char *where)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM dead_letters %s",
	    where);
	return h_pg_int(url, sql);
}

/* No message id twice: each dead letter is one record. */
static int64_t
doubled(const char *url)
{
	return h_pg_int(url, "SELECT count(*) FROM (SELECT message_id FROM"
	    " dead_letters GROUP BY message_id HAVING count(*) > 1) d");
}

START_TEST(two_replicas_archive_each_dead_letter_once)
{
	struct h_rig f;
	struct h_worker b;
	const char *url = pg_rig(&f, "pgr", NULL);
	const int N = 4000;
	int a_took, b_took;

	h_rig_start(&f);
	start_replica(&f, &b, NULL);
	h_fill_confirmed(f.dlq[0], N, "rep");
	ck_assert(h_wait_count(f.dlq[0], 0, 60000));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert_int_eq(h_worker_stop(&b, 10000, NULL), 0);
	/* the broker spread them; each logged what it archived */
	a_took = h_worker_count(&f.w, "dead_letter");
	b_took = h_worker_count(&b, "dead_letter");
	ck_assert_int_gt(a_took, 0);
	ck_assert_int_gt(b_took, 0);
	ck_assert_int_eq(a_took + b_took, N);
	ck_assert_int_eq(records(url, ""), N);
	ck_assert_int_eq(doubled(url), 0);
	ck_assert_int_eq(h_pg_int(url, "SELECT value FROM archive_meta WHERE"
	    " key = 'schema_version'"), 2);
	/* both made the schema at once: one did, the other waited */
	ck_assert_int_eq(h_worker_count(&f.w, "archive_migrated") +
	    h_worker_count(&b, "archive_migrated"), 1);
	h_close(f.c);
}
END_TEST

/* archive.audit_retention_days on PostgreSQL: an expired entry goes
 * with the links to the records it named (taken by their key), the
 * younger one and its links stay. */
START_TEST(audit_entries_expire_with_their_links)
{
	struct h_rig f;
	const char *url = pg_rig(&f, "pga", "audit_retention_days = 1;");
	int64_t id;
	char sid[24];

	h_rig_start(&f);
	h_publish(f.c, f.exch, f.q[0], "{}", 2, "aud-0", NULL);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	id = h_archived(&f.w, "aud-0", 1, WAIT_MS);
	snprintf(sid, sizeof(sid), "%lld", (long long)id);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "assign", sid, "--owner", "a", "--decision", "old", NULL }), 0);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "assign", sid, "--owner", "b", "--decision", "new", NULL }), 0);
	ck_assert_int_eq(h_worker_stop(&f.w, WAIT_MS, NULL), 0);
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM audit_ids"), 2);
	ck_assert_int_eq(h_pg_int(url, "WITH u AS (UPDATE audit SET at = at -"
	    " 2 * 86400000 WHERE id = (SELECT min(id) FROM audit) RETURNING 1)"
	    " SELECT count(*) FROM u"), 1);
	h_rig_start(&f);
	ck_assert(h_worker_wait(&f.w, "retention_applied", 1, WAIT_MS));
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM audit"), 1);
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM audit_ids"), 1);
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM audit_ids l JOIN"
	    " audit u ON u.id = l.audit_id"), 1);
	h_rig_stop(&f);
}
END_TEST

START_TEST(a_replica_killed_mid_batch_leaves_its_deliveries_to_the_other)
{
	struct h_rig f;
	struct h_worker b;
	const char *url = pg_rig(&f, "pgk", NULL);
	const int N = 3000;

	/* replica A commits slowly: killed, it holds deliveries unacked,
	 * some of them committed and some not */
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL },
	    (const char *[]){ "DLQ_FAULT_COMMIT_DELAY_MS=300", NULL });
	ck_assert(h_worker_wait(&f.w, "consumer_started", 1, WAIT_MS));
	start_replica(&f, &b, NULL);
	h_fill_confirmed(f.dlq[0], N, "kil");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 50, 60000));
	ck_assert_int_eq(h_worker_signal(&f.w, SIGKILL, 5000, NULL), -1);
	ck_assert(h_wait_count(f.dlq[0], 0, 60000));
	ck_assert_int_eq(h_worker_stop(&b, 10000, NULL), 0);
	ck_assert_int_eq(records(url, ""), N);
	ck_assert_int_eq(doubled(url), 0);
	h_close(f.c);
}
END_TEST

/* The replica that logged leader_elected, waited for; NULL if none. */
static struct h_worker *
leader_of(struct h_worker *a, struct h_worker *b, int timeout_ms)
{
	int64_t end = h_now_ms() + timeout_ms;

	do {
		if (h_worker_count(a, "leader_elected") > 0)
			return a;
		if (h_worker_count(b, "leader_elected") > 0)
			return b;
		usleep(100 * 1000);
	} while (h_now_ms() < end);
	return NULL;
}

/* The dead letters the digests a worker delivered counted. */
static int64_t
digested(struct h_worker *w)
{
	cJSON **ev;
	int64_t sum = 0;
	int i, n;

	ev = h_worker_events(w, "alert_sent", &n);
	for (i = 0; i < n; i++)
		sum += h_jnum(ev[i], "dead_letters");
	h_events_free(ev, n);
	return sum;
}

/* Digests across replicas: only the leader sends, one per cooldown
 * window; its pending groups are in the archive, so when it is killed
 * (-9) between two digests the other replica takes the lease and sends
 * them when the window ends: every dead letter counted once, none lost,
 * and still one digest per window. */
START_TEST(one_leader_sends_the_digests_and_another_takes_over)
{
	struct h_rig f;
	struct h_worker b, *lead, *other;
	struct h_receiver *r = h_receiver_start();
	struct h_request q[2];
	char alert[512], listen[64], metrics[96], want[64], *body;
	const char *url, *at, *eol;
	int port[2];
	const int N = 2000;
	int64_t end;
	int i;

	port[0] = h_free_port();
	port[1] = h_free_port();
	snprintf(alert, sizeof(alert), "alert = { webhook_url = \"%s\";"
	    " cooldown_ms = 20000; }; http = { listen = \"127.0.0.1:%d\"; };",
	    h_receiver_url(r, "/hook/ha"), port[0]);
	snprintf(listen, sizeof(listen), "DLQ_HTTP_LISTEN=127.0.0.1:%d",
	    port[1]);
	url = pg_rig_with(&f, "pgd", NULL, alert);
	h_rig_start(&f);
	start_replica(&f, &b, (const char *[]){ listen, NULL });
	ck_assert_ptr_nonnull(lead = leader_of(&f.w, &b, WAIT_MS));
	other = lead == &f.w ? &b : &f.w;
	ck_assert(h_worker_wait(other, "leader_follows", 1, WAIT_MS));
	/* each replica's own series carry its name; dlq_leader says which
	 * leads */
	for (i = 0; i < 2; i++) {
		struct h_worker *w = i == 0 ? &f.w : &b;

		snprintf(metrics, sizeof(metrics), "http://127.0.0.1:%d/metrics",
		    port[i]);
		ck_assert_int_eq(h_http_get(metrics, &body), 200);
		snprintf(want, sizeof(want), ":%d\"} %d\n", (int)w->pid,
		    w == lead);
		ck_assert_ptr_nonnull(at = strstr(body,
		    "\ndlq_leader{replica=\""));
		ck_assert_ptr_nonnull(eol = strchr(at + 1, '\n'));
		ck_assert_msg((size_t)(eol + 1 - at) > strlen(want) &&
		    strncmp(eol + 1 - strlen(want), want, strlen(want)) == 0,
		    "%.*s", (int)(eol - at), at);
		ck_assert_ptr_nonnull(strstr(body, "\ndlq_acks_total{replica=\""));
		free(body);
	}

	/* the first dead letter after a quiet time goes out at once, the
	 * next ones wait for the window's end */
	h_fill_confirmed(f.dlq[0], 1, "first");
	ck_assert(h_receiver_wait(r, 1, WAIT_MS));
	ck_assert(h_worker_wait(lead, "alert_sent", 1, WAIT_MS));
	ck_assert_int_eq(digested(lead), 1);
	h_fill_confirmed(f.dlq[0], N, "ldr");
	end = h_now_ms() + 60000;
	while (records(url, "") < N + 1 && h_now_ms() < end)
		usleep(100 * 1000);
	ck_assert_int_eq(records(url, ""), N + 1);
	ck_assert_int_eq(h_receiver_count(r), 1);

	/* killed within its window: the rest is in the archive */
	ck_assert_int_eq(h_worker_signal(lead, SIGKILL, 5000, NULL), -1);
	ck_assert(h_worker_wait(other, "leader_elected", 1, 30000));
	ck_assert(h_receiver_wait(r, 2, 40000));
	ck_assert(h_worker_wait(other, "alert_sent", 1, WAIT_MS));
	ck_assert_int_eq(digested(lead) + digested(other), N + 1);
	q[0] = h_receiver_get(r, 0);
	q[1] = h_receiver_get(r, 1);
	ck_assert_msg(q[1].at_ms - q[0].at_ms >= 19900, "second digest %lld ms"
	    " after the first", (long long)(q[1].at_ms - q[0].at_ms));
	for (i = 0; i < 2; i++)
		free(q[i].body);
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM alert_pending"),
	    0);
	ck_assert_int_eq(h_worker_stop(other, 10000, NULL), 0);
	ck_assert_int_eq(h_receiver_count(r), 2);
	h_receiver_stop(r);
	h_close(f.c);
}
END_TEST

/* Operators on two replicas replay the same queue at once: each record
 * is claimed by one of them (its row lock), published once and recorded
 * once; the other is refused it. */
START_TEST(two_operators_on_two_replicas_replay_each_dead_letter_once)
{
	struct h_rig f;
	struct h_worker b;
	amqp_table_entry_t e = h_str_entry("x-error", "HTTP 503 upstream");
	amqp_table_t headers = { 1, &e };
	const char *url = pg_rig(&f, "pgp", NULL);
	const int N = 300;
	char id[64], sock[300], path[2][300], *out;
	const char *argv[16];
	int64_t end, published = 0;
	pid_t pid[2];
	cJSON *j;
	int i, status;

	h_rig_start(&f);
	start_replica(&f, &b, NULL);
	for (i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "pay-%d", i);
		h_publish(f.c, f.exch, f.q[0], "{\"k\":1}", 7, id, &headers);
	}
	ck_assert_int_eq(h_reject(f.c, f.q[0], N, WAIT_MS), N);
	end = h_now_ms() + 60000;
	while (records(url, "") < N && h_now_ms() < end)
		usleep(100 * 1000);
	ck_assert_int_eq(records(url, ""), N);

	snprintf(sock, sizeof(sock), "DLQ_CONTROL_SOCKET=%s",
	    h_tmp_path("replica-b.sock"));
	argv[0] = h_bin("dlqctl");
	argv[1] = "-c";
	argv[2] = f.cfg;
	argv[3] = "--json";
	argv[4] = "replay";
	argv[5] = "--queue";
	argv[6] = f.q[0];
	argv[7] = "--limit";
	argv[8] = "1000";
	argv[9] = "--rate";
	argv[10] = "0";
	argv[11] = "--execute";
	argv[12] = "--reason";
	argv[13] = "upstream back";
	argv[14] = NULL;
	for (i = 0; i < 2; i++) {
		snprintf(path[i], sizeof(path[i]), "%s-%d.out",
		    h_tmp_path("overlap"), i);
		if ((pid[i] = fork()) == 0) {
			if (i == 1)
				putenv(sock);	/* replica b's socket */
			if (freopen(path[i], "w", stdout) == NULL)
				_exit(126);
			execv(argv[0], (char *const *)argv);
			_exit(127);
		}
	}
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
		out = h_slurp(path[i]);
		ck_assert_msg((j = cJSON_Parse(out)) != NULL, "%s", out);
		published += h_jnum(j, "published");
		cJSON_Delete(j);
		free(out);
	}
	/* every record once, by one operator or the other */
	ck_assert_int_eq(published, N);
	ck_assert_int_eq(h_count(f.q[0]), N);
	ck_assert_int_eq(records(url, "WHERE status = 'replayed'"), N);
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM attempts WHERE"
	    " outcome = 'published'"), N);
	ck_assert_int_eq(h_pg_int(url, "SELECT count(DISTINCT dead_letter_id)"
	    " FROM attempts"), N);
	ck_assert_int_eq(h_worker_stop(&b, 10000, NULL), 0);
	h_rig_stop(&f);
}
END_TEST

/* The automatic redrive runs on the leader alone: each transient dead
 * letter is redriven once, whichever replica archived it. */
START_TEST(only_the_leader_redrives)
{
	struct h_rig f;
	struct h_worker b, *lead, *other;
	amqp_table_entry_t e = h_str_entry("x-error", "upstream timeout");
	amqp_table_t headers = { 1, &e };
	char id[64];
	const char *url;
	const int N = 40;
	amqp_message_t m;
	int i, got = 0;

	url = pg_rig_with(&f, "pgv", NULL, "redrive = { queues = [ \"%1$s\" ];"
	    " min_age_ms = 0; interval_ms = 200; watch_ms = 500; };");
	h_rig_start(&f);
	start_replica(&f, &b, NULL);
	ck_assert_ptr_nonnull(lead = leader_of(&f.w, &b, WAIT_MS));
	other = lead == &f.w ? &b : &f.w;
	for (i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "rd-%d", i);
		h_publish(f.c, f.exch, f.q[0], "{}", 2, id, &headers);
	}
	ck_assert_int_eq(h_reject(f.c, f.q[0], N, WAIT_MS), N);
	/* redriven into the work queue, each once */
	while (got < N && h_get(f.c, f.q[0], &m, WAIT_MS)) {
		amqp_destroy_message(&m);
		got++;
	}
	ck_assert_int_eq(got, N);
	ck_assert(!h_get(f.c, f.q[0], &m, 1500));
	ck_assert_int_eq(records(url, "WHERE status = 'replayed'"), N);
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM attempts WHERE"
	    " actor = 'dlq-worker' AND outcome = 'published'"), N);
	ck_assert_int_gt(h_worker_count(lead, "redrive_tick"), 0);
	ck_assert_int_eq(h_worker_count(other, "redrive_tick"), 0);
	ck_assert_int_eq(h_worker_stop(&b, 10000, NULL), 0);
	h_rig_stop(&f);
}
END_TEST

/* An SQLite archive moves into PostgreSQL whole: its records with their
 * ids and lineage, attempts, audit and its links; a second run finds
 * everything there and changes nothing; a worker on the PostgreSQL
 * archive goes on after the copied ids. A file that is not an archive,
 * a database that holds records already and a configuration without
 * archive.url are refused. */
START_TEST(an_sqlite_archive_moves_into_postgresql_whole)
{
	struct h_rig f, g;
	amqp_table_entry_t e = h_str_entry("x-error", "upstream timeout");
	amqp_table_t headers = { 1, &e };
	const int N = 40;
	char id[64], first[24], sqlite_cfg[300], *out, *err;
	const char *url, *import[6];
	int64_t original;
	cJSON *j;
	int i;

	h_rig_name(&f, "pgi", 1);
	h_rig_setup(&f, NULL);
	h_rig_start(&f);
	for (i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "mv-%d", i);
		h_publish(f.c, f.exch, f.q[0], "{\"k\":1}", 7, id, &headers);
	}
	ck_assert_int_eq(h_reject(f.c, f.q[0], N, WAIT_MS), N);
	original = h_archived(&f.w, "mv-0", 1, WAIT_MS);
	ck_assert(h_worker_wait(&f.w, "dead_letter", N, WAIT_MS));
	snprintf(first, sizeof(first), "%lld", (long long)original);
	/* a case, a drop, and a replay that died again: lineage */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "assign",
	    "2", "3", "--owner", "alice", "--decision", "wait", NULL }), 0);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "drop",
	    "4", "--reason", "test", NULL }), 0);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "replay",
	    first, "--execute", "--reason", "moved", NULL }), 0);
	cJSON_Delete(j);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	ck_assert(h_archived(&f.w, "mv-0", 2, WAIT_MS) > 0);
	h_rig_stop(&f);
	/* (the harness keeps a few configurations' paths at a time) */
	snprintf(sqlite_cfg, sizeof(sqlite_cfg), "%s", f.cfg);

	url = pg_rig(&g, "pgj", NULL);
	import[0] = h_bin("dlq-worker");
	import[1] = "-c";
	import[2] = g.cfg;
	import[3] = "--import-archive";
	import[4] = f.db;
	import[5] = NULL;
	for (i = 0; i < 2; i++) {	/* the second finds it all there */
		ck_assert_int_eq(h_run_split(import, NULL, &out, &err), 0);
		ck_assert_msg(strstr(out, "import verified") != NULL &&
		    strstr(out, "NOT THE SAME") == NULL, "%s%s", out, err);
		ck_assert_ptr_nonnull(strstr(out, i == 0 ?
		    "dead_letters: 41 copied" : "dead_letters: 0 copied"));
		free(out);
		free(err);
	}
	ck_assert_int_eq(records(url, ""), N + 1);
	ck_assert_int_eq(records(url, "WHERE status = 'assigned' AND owner ="
	    " 'alice'"), 2);
	ck_assert_int_eq(records(url, "WHERE status = 'discarded'"), 1);
	ck_assert_int_eq(records(url, "WHERE status = 'replayed'"), 1);
	snprintf(id, sizeof(id), "WHERE replay_of = %s", first);
	ck_assert_int_eq(records(url, id), 1);
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM attempts WHERE"
	    " outcome = 'published'"), 1);
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM audit"),
	    h_db_int(f.db, "SELECT count(*) FROM audit"));
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM audit_ids"),
	    h_db_int(f.db, "SELECT count(*) FROM audit_ids"));
	ck_assert_int_eq(h_pg_int(url, "SELECT count(*) FROM dead_letters"
	    " WHERE hint IS NULL"), h_db_int(f.db, "SELECT count(*) FROM"
	    " dead_letters WHERE hint IS NULL AND hint_id IS NULL"));

	/* a worker on it: the copied records answer, new ones come after */
	h_rig_start(&g);
	ck_assert_int_eq(h_dlqctl(g.cfg, NULL, &j, (const char *[]){ "show",
	    "2", NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "owner"), "alice");
	cJSON_Delete(j);
	h_fill_confirmed(g.dlq[0], 1, "after");
	ck_assert(h_worker_wait(&g.w, "dead_letter", 1, WAIT_MS));
	ck_assert_int_eq(records(url, ""), N + 2);
	ck_assert_int_eq(h_pg_int(url, "SELECT min(id) FROM dead_letters WHERE"
	    " message_id LIKE 'after%'"), N + 2);
	h_rig_stop(&g);

	/* refused: a database with records of its own, a file that is not
	 * an archive, no archive.url */
	(void)pg_rig(&g, "pgk2", NULL);
	h_rig_start(&g);
	h_fill_confirmed(g.dlq[0], 1, "own");
	ck_assert(h_worker_wait(&g.w, "dead_letter", 1, WAIT_MS));
	h_rig_stop(&g);
	import[2] = g.cfg;
	ck_assert_int_eq(h_run_split(import, NULL, &out, &err), 1);
	ck_assert_msg(strstr(err, "holds 1 record already") != NULL, "%s",
	    err);
	free(out);
	free(err);
	import[4] = g.cfg;	/* a text file */
	ck_assert_int_eq(h_run_split(import, NULL, &out, &err), 1);
	ck_assert_msg(strstr(err, "not a dlq-monitor archive") != NULL ||
	    strstr(err, "cannot open it") != NULL, "%s", err);
	free(out);
	free(err);
	import[2] = sqlite_cfg;	/* an SQLite configuration */
	import[4] = f.db;
	i = h_run_split(import, NULL, &out, &err);
	ck_assert_msg(i == 2 && strstr(err, "archive.url") != NULL, "exit %d:"
	    " %s", i, err);
	free(out);
	free(err);
}
END_TEST

START_TEST(postgres_restarted_mid_drain_loses_and_doubles_nothing)
{
	struct h_rig f;
	struct h_worker b;
	const char *url = pg_rig(&f, "pgs", NULL);
	const int N = 10000;
	int lost;

	h_rig_start(&f);
	start_replica(&f, &b, NULL);
	h_fill_confirmed(f.dlq[0], N, "rst");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 500, 60000));
	h_pg_control("restart");
	ck_assert(h_wait_count(f.dlq[0], 0, 120000));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert_int_eq(h_worker_stop(&b, 10000, NULL), 0);
	ck_assert_int_eq(records(url, ""), N);
	ck_assert_int_eq(doubled(url), 0);
	/* the restart cut their sessions: they said so, and the consumers
	 * came back (a connection found cut is said once per handle, when
	 * it is next used) */
	lost = h_worker_count(&f.w, "archive_connection_lost") +
	    h_worker_count(&b, "archive_connection_lost");
	ck_assert_int_ge(lost, 1);
	ck_assert_int_ge(h_worker_count(&f.w, "archive_reconnected") +
	    h_worker_count(&b, "archive_reconnected"), 1);
	h_close(f.c);
}
END_TEST

START_TEST(a_frozen_postgres_pauses_consumption_and_acks_nothing)
{
	struct h_rig f;
	const char *url = pg_rig(&f, "pgf", "busy_timeout_ms = 1000;");
	char watchdog[256], *out;
	const int N = 2000;
	cJSON **ev;
	int n, i;
	bool said;

	h_rig_start(&f);
	h_fill_confirmed(f.dlq[0], 100, "frz0");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 100, WAIT_MS));
	/* thawed by itself should the test fail before it thaws it */
	snprintf(watchdog, sizeof(watchdog), "(sleep 60; scripts/postgres.sh "
	    "thaw %d) >/dev/null 2>&1 &", atoi(strrchr(h_pg_url(), ':') + 1));
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash", "-c", watchdog,
	    NULL }, NULL, &out), 0);
	free(out);
	h_pg_control("freeze");
	h_fill_confirmed(f.dlq[0], N - 100, "frz1");
	ck_assert(h_worker_wait(&f.w, "archive_error", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "archive_connection_lost", &n);
	for (i = 0, said = false; i < n; i++)
		said |= strstr(h_jstr(ev[i], "error"), "no answer from the "
		    "server within 1000 ms") != NULL;
	h_events_free(ev, n);
	ck_assert(said);
	/* nothing commits while it is frozen (a dead letter is logged
	 * after its commit), so nothing is acked */
	ck_assert_int_eq(h_worker_count(&f.w, "dead_letter"), 100);
	h_pg_control("thaw");
	ck_assert(h_worker_wait(&f.w, "archive_recovered", 1, 60000));
	ck_assert(h_wait_count(f.dlq[0], 0, 60000));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert_int_eq(records(url, ""), N);
	ck_assert_int_eq(doubled(url), 0);
	h_close(f.c);
}
END_TEST

START_TEST(wrong_credentials_or_no_database_stop_the_start_without_the_password)
{
	struct h_rig f;
	char bad[512], env[600], *out, *err;
	const char *url = pg_rig(&f, "pgc", NULL), *at;
	cJSON **ev;
	int n;

	/* the password replaced by a wrong one */
	at = strrchr(url, '@');
	snprintf(bad, sizeof(bad), "postgresql://postgres:wrong-pw-42%s", at);
	snprintf(env, sizeof(env), "DLQ_ARCHIVE_URL=%s", bad);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlq-worker"),
	    "-c", f.cfg, "--check-config", NULL }, (const char *[]){ env,
	    NULL }, &out, &err), 1);
	ck_assert_msg(strstr(err, "password authentication failed") != NULL,
	    "%s", err);
	ck_assert_ptr_nonnull(strstr(err, "postgresql://postgres@127.0.0.1:"));
	ck_assert_ptr_null(strstr(err, "wrong-pw-42"));
	free(out);
	free(err);
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL },
	    (const char *[]){ env, NULL });
	ck_assert_int_eq(h_worker_exit(&f.w, WAIT_MS), 1);
	ev = h_worker_events(&f.w, "archive_open_failed", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_ptr_nonnull(strstr(h_jstr(ev[0], "url"),
	    "postgresql://postgres@127.0.0.1:"));
	h_events_free(ev, n);
	out = h_slurp(f.w.log);
	ck_assert_ptr_null(strstr(out, "wrong-pw-42"));
	free(out);

	/* a database that is not there */
	snprintf(env, sizeof(env), "DLQ_ARCHIVE_URL=%.*s/no_such_db_%d",
	    (int)(strrchr(url, '/') - url), url, (int)getpid());
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlq-worker"),
	    "-c", f.cfg, "--check-config", NULL }, (const char *[]){ env,
	    NULL }, &out, &err), 1);
	ck_assert_msg(strstr(err, "does not exist") != NULL, "%s", err);
	ck_assert_ptr_null(strstr(err, "dlq-test"));
	free(out);
	free(err);

	/* and the right one: which server, which schema */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlq-worker"),
	    "-c", f.cfg, "--check-config", NULL }, NULL, &out, &err), 0);
	ck_assert_msg(strstr(out, "archive: PostgreSQL at postgresql://postgres@"
	    "127.0.0.1:") != NULL && strstr(out, "no archive yet") != NULL,
	    "%s", out);
	free(out);
	free(err);
	h_close(f.c);
}
END_TEST

/* The keys of an object, in order, as one string "a,b,c". */
static void
keys_of(const cJSON *o, char *out, size_t n)
{
	const cJSON *k;
	size_t len = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(k, o)
		len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s",
		    len > 0 ? "," : "", k->string);
}

/* Each of `fields` of a and b prints the same (as JSON). */
static void
same_fields(const cJSON *a, const cJSON *b, const char *const *fields,
    int n, const char *what)
{
	char *v0, *v1;
	int i;

	for (i = 0; i < n; i++) {
		v0 = cJSON_PrintUnformatted(cJSON_GetObjectItem(a, fields[i]));
		v1 = cJSON_PrintUnformatted(cJSON_GetObjectItem(b, fields[i]));
		ck_assert_msg(v0 != NULL && v1 != NULL && strcmp(v0, v1) == 0,
		    "%s: %s: %s vs %s", what, fields[i], v0, v1);
		cJSON_free(v0);
		cJSON_free(v1);
	}
}

/* The same dead letters in an SQLite and a PostgreSQL archive: dlqctl's
 * stats, list, show, groups (by signature and by cause), the changes,
 * audit and purge answer alike, masking included; what PostgreSQL does
 * not do yet says so, as an error. */
START_TEST(stats_list_show_and_groups_answer_alike_on_both_backends)
{
	struct h_rig f[2];
	static const char *const fields[] = { "total", "unresolved",
	    "new_last_hour", "replaying_unknown", "payloads_purged" };
	/* (signatures, routing keys and the x-first-death headers name
	 * each rig's own queue) */
	static const char *const same[] = { "message_id", "reason", "class",
	    "status", "error", "payload", "hint", "payload_sha256",
	    "content_type", "delivery_mode", "retry_count" };
	char k0[1024], k1[1024], *v0, *v1;
	static const char *const group_same[] = { "reason", "class", "error",
	    "count", "unresolved" };
	cJSON *j[2], *l[2], *sh[2], *gr[2], *g[2], *e;
	int64_t filled = 0;
	int b, i, n;

	h_rig_name(&f[0], "pgl", 1);
	h_rig_setup(&f[0], NULL);
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlq-worker"), "-c",
	    f[0].cfg, "--assert-only", NULL }, NULL, NULL), 0);
	(void)pg_rig(&f[1], "pgm", NULL);
	for (b = 0; b < 2; b++) {
		h_rig_start(&f[b]);
		h_fill_confirmed(f[b].dlq[0], 30, "same");
		ck_assert(h_worker_wait(&f[b].w, "dead_letter", 30, WAIT_MS));
		filled = h_now_ms();	/* all archived by now */
		ck_assert_int_eq(h_dlqctl(f[b].cfg, NULL, &j[b],
		    (const char *[]){ "stats", NULL }), 0);
		ck_assert_int_eq(h_dlqctl(f[b].cfg, NULL, &l[b],
		    (const char *[]){ "list", "--limit", "5", NULL }), 0);
		ck_assert_int_eq(h_dlqctl(f[b].cfg, NULL, &sh[b],
		    (const char *[]){ "show", "--payload", "7", NULL }), 0);
		ck_assert_int_eq(h_dlqctl(f[b].cfg, NULL, &gr[b],
		    (const char *[]){ "groups", NULL }), 0);
		g[b] = cJSON_IsArray(gr[b]) ? gr[b] :	/* {"groups": [...]} */
		    cJSON_GetObjectItem(gr[b], "groups");
	}
	ck_assert_int_eq(cJSON_GetArraySize(g[1]), cJSON_GetArraySize(g[0]));
	ck_assert_int_ge(cJSON_GetArraySize(g[1]), 1);
	keys_of(cJSON_GetArrayItem(g[0], 0), k0, sizeof(k0));
	keys_of(cJSON_GetArrayItem(g[1], 0), k1, sizeof(k1));
	ck_assert_str_eq(k1, k0);
	same_fields(cJSON_GetArrayItem(g[0], 0), cJSON_GetArrayItem(g[1], 0),
	    group_same, sizeof(group_same) / sizeof(group_same[0]), "groups");
	keys_of(sh[0], k0, sizeof(k0));
	keys_of(sh[1], k1, sizeof(k1));
	ck_assert_str_eq(k1, k0);
	same_fields(sh[0], sh[1], same, sizeof(same) / sizeof(same[0]),
	    "show");
	keys_of(cJSON_GetObjectItem(sh[0], "headers"), k0, sizeof(k0));
	keys_of(cJSON_GetObjectItem(sh[1], "headers"), k1, sizeof(k1));
	ck_assert_str_eq(k1, k0);
	keys_of(j[0], k0, sizeof(k0));
	keys_of(j[1], k1, sizeof(k1));
	ck_assert_str_eq(k1, k0);
	for (i = 0; i < (int)(sizeof(fields) / sizeof(fields[0])); i++)
		ck_assert_msg(cJSON_GetObjectItem(j[1], fields[i])->valuedouble
		    == cJSON_GetObjectItem(j[0], fields[i])->valuedouble, "%s",
		    fields[i]);
	ck_assert_int_eq(cJSON_GetObjectItem(j[1], "total")->valueint, 30);
	n = cJSON_GetArraySize(cJSON_GetObjectItem(l[1], "dead_letters") ?
	    cJSON_GetObjectItem(l[1], "dead_letters") : l[1]);
	ck_assert_int_eq(n, 5);
	keys_of(j[0], k0, sizeof(k0));
	e = cJSON_IsArray(l[0]) ? l[0] : cJSON_GetObjectItem(l[0],
	    "dead_letters");
	keys_of(cJSON_GetArrayItem(e, 0), k0, sizeof(k0));
	e = cJSON_IsArray(l[1]) ? l[1] : cJSON_GetObjectItem(l[1],
	    "dead_letters");
	keys_of(cJSON_GetArrayItem(e, 0), k1, sizeof(k1));
	ck_assert_str_eq(k1, k0);
	for (b = 0; b < 2; b++) {
		cJSON_Delete(j[b]);
		cJSON_Delete(l[b]);
		cJSON_Delete(sh[b]);
		cJSON_Delete(gr[b]);
	}
	/* changes: the same exit codes, the same answers id by id, the
	 * same audit trail */
	{
		const char *const *const steps[] = {
			(const char *[]){ "assign", "1", "2", "99999", "--owner",
			    "alice", "--decision", "wait", NULL },
			(const char *[]){ "drop", "3", "--reason", "test", NULL },
			(const char *[]){ "drop", "3", "--reason", "again", NULL },
			(const char *[]){ "reopen", "3", "--reason", "real", NULL },
			(const char *[]){ "assign", "3", "--owner", "bob",
			    "--decision", "replay", NULL },
		};
		static const int rc[] = { 1, 0, 3, 0, 0 };
		cJSON *ans[2];

		for (i = 0; i < (int)(sizeof(steps) / sizeof(steps[0])); i++) {
			for (b = 0; b < 2; b++)
				ck_assert_msg(h_dlqctl(f[b].cfg, NULL, &ans[b],
				    steps[i]) == rc[i], "backend %d: step %d", b,
				    i);
			v0 = cJSON_PrintUnformatted(cJSON_GetObjectItem(ans[0],
			    "results"));
			v1 = cJSON_PrintUnformatted(cJSON_GetObjectItem(ans[1],
			    "results"));
			ck_assert_msg(v0 != NULL && v1 != NULL &&
			    strcmp(v0, v1) == 0, "step %d: %s vs %s", i, v0, v1);
			cJSON_free(v0);
			cJSON_free(v1);
			for (b = 0; b < 2; b++)
				cJSON_Delete(ans[b]);
		}
	}
	for (b = 0; b < 2; b++)	/* the first show's were freed above */
		ck_assert_int_eq(h_dlqctl(f[b].cfg, NULL, &sh[b],
		    (const char *[]){ "show", "3", NULL }), 0);
	ck_assert_str_eq(cJSON_GetObjectItem(sh[1], "owner")->valuestring,
	    "bob");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(sh[1],
	    "audit")), 4);
	for (i = 0; i < 4; i++) {
		v0 = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetArrayItem(
		    cJSON_GetObjectItem(sh[0], "audit"), i), "result"));
		v1 = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetArrayItem(
		    cJSON_GetObjectItem(sh[1], "audit"), i), "result"));
		ck_assert_msg(v0 != NULL && v1 != NULL && strcmp(v0, v1) == 0,
		    "audit %d: %s vs %s", i, v0, v1);
		cJSON_free(v0);
		cJSON_free(v1);
	}
	for (b = 0; b < 2; b++)
		cJSON_Delete(sh[b]);

	/* retention: the payload of the one discarded record (id 3 is
	 * assigned again; 4 is dropped now) received over a second ago */
	while (h_now_ms() - filled < 1100)
		usleep(50 * 1000);	/* the cut-off's second has passed */
	for (b = 0; b < 2; b++) {
		ck_assert_int_eq(h_dlqctl(f[b].cfg, NULL, &e, (const char *[]){
		    "drop", "4", "--reason", "old", NULL }), 0);
		cJSON_Delete(e);
		ck_assert_int_eq(h_dlqctl(f[b].cfg, NULL, &e, (const char *[]){
		    "purge", "--older-than", "1s", "--yes", NULL }), 0);
		ck_assert_int_eq(cJSON_GetObjectItem(e, "purged")->valueint, 1);
		cJSON_Delete(e);
		ck_assert_int_eq(h_dlqctl(f[b].cfg, NULL, &e, (const char *[]){
		    "audit", "--limit", "50", NULL }), 0);
		n = cJSON_GetArraySize(cJSON_IsArray(e) ? e :
		    cJSON_GetObjectItem(e, "entries"));
		if (b == 0)
			i = n;
		else
			ck_assert_int_eq(n, i);
		cJSON_Delete(e);
	}
	ck_assert_int_ge(i, 6);

	/* groups by cause: the same causes, counts and texts */
	for (b = 0; b < 2; b++) {
		ck_assert_int_eq(h_dlqctl(f[b].cfg, NULL, &gr[b],
		    (const char *[]){ "groups", "--by-cause", NULL }), 0);
		g[b] = cJSON_IsArray(gr[b]) ? gr[b] :
		    cJSON_GetObjectItem(gr[b], "causes");
	}
	ck_assert_int_ge(cJSON_GetArraySize(g[0]), 1);
	ck_assert_int_eq(cJSON_GetArraySize(g[1]), cJSON_GetArraySize(g[0]));
	keys_of(cJSON_GetArrayItem(g[0], 0), k0, sizeof(k0));
	keys_of(cJSON_GetArrayItem(g[1], 0), k1, sizeof(k1));
	ck_assert_str_eq(k1, k0);
	same_fields(cJSON_GetArrayItem(g[0], 0), cJSON_GetArrayItem(g[1], 0),
	    group_same, sizeof(group_same) / sizeof(group_same[0]),
	    "by cause");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(g[1], 0), "groups")), cJSON_GetArraySize(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(g[0], 0), "groups")));
	for (b = 0; b < 2; b++)
		cJSON_Delete(gr[b]);

	/* the redrive's status (off here: no queues) */
	for (b = 0; b < 2; b++)
		ck_assert_int_eq(h_dlqctl(f[b].cfg, NULL, &j[b],
		    (const char *[]){ "redrive", "status", NULL }), 0);
	v0 = cJSON_PrintUnformatted(j[0]);
	v1 = cJSON_PrintUnformatted(j[1]);
	ck_assert_str_eq(v1, v0);
	cJSON_free(v0);
	cJSON_free(v1);
	for (b = 0; b < 2; b++)
		cJSON_Delete(j[b]);
	for (b = 0; b < 2; b++)
		h_rig_stop(&f[b]);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("postgres");
	TCase *tc = tcase_create("replicas");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, two_replicas_archive_each_dead_letter_once);
	tcase_add_test(tc, audit_entries_expire_with_their_links);
	tcase_add_test(tc,
	    a_replica_killed_mid_batch_leaves_its_deliveries_to_the_other);
	tcase_add_test(tc, one_leader_sends_the_digests_and_another_takes_over);
	tcase_add_test(tc,
	    two_operators_on_two_replicas_replay_each_dead_letter_once);
	tcase_add_test(tc, only_the_leader_redrives);
	tcase_add_test(tc, an_sqlite_archive_moves_into_postgresql_whole);
	tcase_add_test(tc, postgres_restarted_mid_drain_loses_and_doubles_nothing);
	tcase_add_test(tc, a_frozen_postgres_pauses_consumption_and_acks_nothing);
	tcase_add_test(tc,
	    wrong_credentials_or_no_database_stop_the_start_without_the_password);
	tcase_add_test(tc,
	    stats_list_show_and_groups_answer_alike_on_both_backends);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
