/* check_faults.c - things break on purpose: a DLQ deleted under the
 * consumer or missing at start, SIGTERM under load (twice), secrets and
 * personal data in logs and webhook bodies, control-socket abuse, a vhost
 * the broker refuses, a broker memory alarm, a flood with the webhook
 * down. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../check_main.h"
#include "harness.h"
#include "receiver.h"

#define WAIT_MS	20000

/* Two fresh queues, asserted; the worker is not started. */
static void
setup_only(struct h_rig *f, const char *extra)
{
	h_rig_name(f, "fa", 2);
	h_rig_setup(f, extra);
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlq-worker"), "-c",
	    f->cfg, "--assert-only", NULL }, NULL, NULL), 0);
}

static int
rows(const char *db, const char *where)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM dead_letters %s",
	    where);
	return (int)h_db_int(db, sql);
}

static bool
integrity_ok(const char *db)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	bool ok = false;

	ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
	if (sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL) ==
	    SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		ok = strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
	sqlite3_finalize(st);
	sqlite3_close(h);
	return ok;
}

/* A DLQ deleted while consumed (by mistake, or a broker back without its
 * definitions): the broker drops what dies meanwhile, so the worker
 * declares it again by itself, says so in the digest, and consumes. */
START_TEST(a_deleted_dlq_is_declared_again_and_consumed)
{
	struct h_rig f;
	cJSON **ev;
	int n;

	setup_only(&f, NULL);
	h_rig_start(&f);
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(f.dlq[0]), 0, 0);
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	ck_assert(h_worker_wait(&f.w, "consumer_cancelled", 1, WAIT_MS));
	ck_assert(h_worker_wait(&f.w, "topology_reassert", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "topology_reassert", &n);
	ck_assert_str_eq(h_jstr(ev[0], "dlq"), f.dlq[0]);
	h_events_free(ev, n);
	ck_assert(h_worker_wait(&f.w, "consumer_started", 3, WAIT_MS));
	ck_assert_int_ge(h_count(f.dlq[0]), 0);		/* it is there */
	h_publish(f.c, f.exch, f.q[0], "{}", 2, "after", NULL);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	/* on-call hears of it: dead letters may have been dropped */
	ck_assert(h_worker_wait(&f.w, "alert_digest", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "alert_digest", &n);
	ck_assert_msg(strstr(h_jstr(ev[0], "text"), "DLQ missing") &&
	    strstr(h_jstr(ev[0], "text"), "declared again") &&
	    strstr(h_jstr(ev[0], "text"), f.dlq[0]), "%s",
	    h_jstr(ev[0], "text"));
	h_events_free(ev, n);
	h_close(f.c);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
}
END_TEST

/* topology.reassert = false (a user that may not declare queues): the
 * consumer waits, with backoff, for someone to declare it. */
START_TEST(a_deleted_dlq_is_waited_for_without_reassert)
{
	struct h_rig f;
	char *out;
	int64_t t0;
	int before;

	setup_only(&f, "topology = { reassert = false; };");
	h_rig_start(&f);
	t0 = h_now_ms();
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(f.dlq[0]), 0, 0);
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	ck_assert(h_worker_wait(&f.w, "consumer_cancelled", 1, WAIT_MS));
	/* it keeps trying, with backoff: no busy loop. Jittered delays are
	 * at least reconnect_min_ms (100 ms here), so the count is bounded
	 * by the time passed; a loop without backoff makes thousands. */
	ck_assert(h_worker_wait(&f.w, "consume_failed", 1, WAIT_MS));
	usleep(2000 * 1000);
	before = h_worker_count(&f.w, "consumer_reconnecting");
	ck_assert_msg(before <= (h_now_ms() - t0) / 100 + 1,
	    "%d reconnects in %lld ms", before, (long long)(h_now_ms() - t0));
	ck_assert_int_eq(h_count(f.dlq[0]), -1);	/* still gone */
	ck_assert_int_eq(h_worker_count(&f.w, "topology_reassert"), 0);
	/* someone asserts the topology again: the consumer is back */
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-c", f.cfg,
	    "topology", "assert", NULL }, NULL, &out), 0);
	free(out);
	ck_assert(h_worker_wait(&f.w, "consumer_started", 3, WAIT_MS));
	h_publish(f.c, f.exch, f.q[0], "{}", 2, "after", NULL);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	h_close(f.c);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
}
END_TEST

/* A quorum queue that dead-letters at least once keeps what dies while
 * its DLQ is gone (deleted by mistake) and sends it on once the DLQ is
 * back; at most once (the broker's default) it would be dropped. */
START_TEST(dead_letters_of_a_gap_without_dlq_wait_in_an_at_least_once_queue)
{
	struct h_rig f;
	cJSON **ev;
	char id[32], *out;
	bool seen[3] = { false };
	int i, k, n;

	h_set_topology("defaults = { type = \"quorum\"; "
	    "dead_letter_strategy = \"at-least-once\"; };");
	h_rig_name(&f, "alo", 1);
	/* the gap stays open until the test closes it */
	h_rig_setup(&f, "topology = { reassert = false; };");
	h_rig_start(&f);
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(f.dlq[0]), 0, 0);
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	ck_assert(h_worker_wait(&f.w, "consumer_cancelled", 1, WAIT_MS));
	for (i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "gap-%d", i);
		h_publish(f.c, f.exch, f.q[0], "{}", 2, id, NULL);
	}
	ck_assert_int_eq(h_reject(f.c, f.q[0], 3, WAIT_MS), 3);
	/* no queue holds them: the DLQ is gone, the work queue is empty */
	ck_assert_int_eq(h_count(f.dlq[0]), -1);
	ck_assert_int_eq(h_count(f.q[0]), 0);
	ck_assert_int_eq(h_worker_count(&f.w, "dead_letter"), 0);
	/* someone asserts the topology again: the DLQ is back, and the
	 * broker sends it what it kept */
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-c", f.cfg,
	    "topology", "assert", NULL }, NULL, &out), 0);
	free(out);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3, WAIT_MS));
	ev = h_worker_events(&f.w, "dead_letter", &n);
	ck_assert_int_eq(n, 3);
	for (i = 0; i < n; i++) {		/* each once */
		ck_assert_int_eq(sscanf(h_jstr(ev[i], "message_id"), "gap-%d",
		    &k), 1);
		ck_assert(k >= 0 && k < 3 && !seen[k]);
		seen[k] = true;
		ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(cJSON_GetObjectItem(
		    ev[i], "x_death"), 0), "reason"), "rejected");
	}
	h_events_free(ev, n);
	h_rig_stop(&f);
}
END_TEST

START_TEST(sigterm_under_load_finishes_cleanly_and_twice_exits_at_once)
{
	struct h_rig f;
	char id[32];
	int i, n, logged, left;
	int64_t ms;
	const int N = 5000;

	setup_only(&f, NULL);
	for (i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "s-%d", i);
		h_publish(f.c, "", f.dlq[i % 2], "{\"k\":1}", 7, id, NULL);
	}
	ck_assert(h_wait_count(f.dlq[0], N / 2, WAIT_MS));
	h_rig_start(&f);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 200, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, &ms), 0);
	ck_assert_msg(ms < 10000, "shutdown took %lld ms", (long long)ms);
	/* nothing half-done: what was logged was archived, the rest waits */
	logged = h_worker_count(&f.w, "dead_letter");
	n = rows(f.db, "");
	ck_assert_int_eq(n, logged);
	left = h_count(f.dlq[0]) + h_count(f.dlq[1]);
	ck_assert_int_eq(n + left, N);

	/* a second SIGTERM: out at once, the archive intact */
	h_rig_start(&f);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 100, WAIT_MS));
	kill(f.w.pid, SIGTERM);
	ck_assert(h_worker_wait(&f.w, "shutdown_started", 1, WAIT_MS));
	kill(f.w.pid, SIGTERM);
	ck_assert_int_eq(h_worker_exit(&f.w, 2000), 1);
	ck_assert(integrity_ok(f.db));

	/* and the rest is archived exactly once by the next run */
	h_rig_start(&f);
	ck_assert(h_wait_count(f.dlq[0], 0, 60000));
	ck_assert(h_wait_count(f.dlq[1], 0, 60000));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert_int_eq(rows(f.db, ""), N);
	/* no message id twice: the query has no row at all */
	ck_assert_int_eq(rows(f.db, "GROUP BY message_id HAVING count(*) > 1"),
	    -1);
	h_close(f.c);
}
END_TEST

static bool
contains(const char *hay, const char *needle)
{
	return strstr(hay, needle) != NULL;
}

static int
stat_mode(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (int)(st.st_mode & 07777);
}

START_TEST(no_secret_or_masked_value_in_logs_or_webhooks)
{
	struct h_rig f;
	struct h_receiver *r = h_receiver_start();
	char port[16], user[64], pass[64], url[256], extra[1024], *out, *log;
	const char *p;
	amqp_table_entry_t e;
	amqp_table_t h = { 1, &e };
	const char *body = "{\"password\":\"Hunter2Secret\",\"card\":"
	    "\"4111111111111111\",\"phone\":\"+15550100999\"}";
	int i;

	/* a broker user of our own, with a password that is easy to grep */
	snprintf(port, sizeof(port), "%d", h_port());
	snprintf(user, sizeof(user), "u%d", (int)getpid());
	snprintf(pass, sizeof(pass), "Pw-%d-zq9X", (int)getpid());
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash", "scripts/broker.sh",
	    "ctl", port, "add_user", user, pass, NULL }, NULL, &out), 0);
	free(out);
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash", "scripts/broker.sh",
	    "ctl", port, "set_permissions", "-p", "/", user, ".*", ".*", ".*",
	    NULL }, NULL, &out), 0);
	free(out);
	p = strstr(h_url(), "@");
	snprintf(url, sizeof(url), "amqp://%s:%s%s", user, pass, p);
	snprintf(extra, sizeof(extra), "alert = { webhook_url = \"%s\"; "
	    "cooldown_ms = 0; };\n", h_receiver_url(r,
	    "/services/T0/B0/HookS3cretPath"));
	setup_only(&f, extra);
	chmod(f.cfg, 0644);	/* readable by all, with a webhook in it */
	{
		static char env[320];
		snprintf(env, sizeof(env), "RABBITMQ_URL=%s", url);
		h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL },
		    (const char *[]){ env, NULL });
	}
	ck_assert(h_worker_wait(&f.w, "consumer_started", 2, WAIT_MS));
	e.key = amqp_cstring_bytes("x-error");
	e.value.kind = AMQP_FIELD_KIND_UTF8;
	e.value.value.bytes = amqp_cstring_bytes("mail to leak.me@example.com "
	    "failed, call +1 555 0100 999, cache redis://:DsnPw77x@cache:6379");
	for (i = 0; i < 3; i++)
		h_publish(f.c, f.exch, f.q[0], body, strlen(body), "leak", &h);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 3, WAIT_MS), 3);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3, WAIT_MS));
	ck_assert(h_receiver_wait(r, 1, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	log = h_slurp(f.w.log);
	ck_assert(contains(log, "\"event\":\"config_insecure\""));
	/* the archive holds the payloads: a new one is the worker's alone */
	ck_assert_int_eq(stat_mode(f.db), 0600);
	ck_assert(!contains(log, "archive_readable"));
	for (i = 0; i < h_receiver_count(r) + 1; i++) {
		struct h_request q = { 0 };
		const char *text = log;
		if (i > 0) {
			q = h_receiver_get(r, i - 1);
			text = q.body;
		}
		ck_assert_msg(!contains(text, pass), "password leaked");
		ck_assert_msg(!contains(text, "HookS3cretPath"), "webhook path");
		ck_assert_msg(!contains(text, "Hunter2Secret"), "masked key");
		ck_assert_msg(!contains(text, "4111111111111111"), "card");
		ck_assert_msg(!contains(text, "leak.me@example.com"), "email");
		ck_assert_msg(!contains(text, "555 0100 999"), "phone");
		ck_assert_msg(!contains(text, "DsnPw77x"), "URL password");
		/* what is left of it says where it went */
		ck_assert_msg(contains(text, "redis://:***@cache:6379"), "%s",
		    text);
		if (i > 0)
			free(q.body);
	}
	free(log);
	h_receiver_stop(r);
	h_close(f.c);
	h_run((const char *[]){ "/bin/bash", "scripts/broker.sh", "ctl", port,
	    "delete_user", user, NULL }, NULL, &out);
	free(out);
}
END_TEST

static int
count_fds(pid_t pid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	ck_assert_ptr_nonnull(dir = opendir(path));
	while ((d = readdir(dir)) != NULL)
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

START_TEST(an_archive_others_can_read_is_warned_about)
{
	struct h_rig f;
	cJSON **ev;
	char *log;
	int n;

	setup_only(&f, NULL);
	close(open(f.db, O_WRONLY | O_CREAT | O_EXCL, 0600));
	ck_assert_int_eq(chmod(f.db, 0644), 0);
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL }, NULL);
	ck_assert(h_worker_wait(&f.w, "worker_started", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "archive_readable", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(h_jstr(ev[0], "path"), f.db);
	ck_assert_str_eq(h_jstr(ev[0], "mode"), "0644");
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert_int_eq(stat_mode(f.db), 0644);	/* warned, not changed */

	/* readable by the worker's own group only: nothing to say */
	ck_assert_int_eq(chown(f.db, (uid_t)-1, getegid()), 0);
	ck_assert_int_eq(chmod(f.db, 0640), 0);
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL }, NULL);
	ck_assert(h_worker_wait(&f.w, "worker_started", 1, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	log = h_slurp(f.w.log);
	ck_assert(contains(log, "\"event\":\"worker_started\""));
	ck_assert(!contains(log, "archive_readable"));
	free(log);
	h_close(f.c);
}
END_TEST

START_TEST(control_socket_abuse_leaks_no_descriptors)
{
	struct h_rig f;
	struct sockaddr_un sa;
	char buf[256];
	int i, fd, before, after;
	int64_t end;

	setup_only(&f, NULL);
	h_rig_start(&f);
	ck_assert(h_worker_wait(&f.w, "control_listening", 1, WAIT_MS));
	before = count_fds(f.w.pid);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", h_socket(f.prefix));
	for (i = 0; i < 2000; i++) {
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		switch (i % 4) {
		case 0:		/* connect and go */
			break;
		case 1:		/* half a request */
			send(fd, "{\"cmd\":\"li", 10, MSG_NOSIGNAL);
			break;
		case 2:		/* garbage, wait for the answer */
			send(fd, "\xff\xfe garbage\n", 11, MSG_NOSIGNAL);
			if (read(fd, buf, sizeof(buf)) < 0)
				perror("read");
			break;
		case 3:		/* a request, gone before the answer */
			send(fd, "{\"cmd\":\"stats\"}\n", 16, MSG_NOSIGNAL);
			break;
		}
		close(fd);
	}
	/* the worker closes what we dropped; give it its poll cycles */
	end = h_now_ms() + 5000;
	while ((after = count_fds(f.w.pid)) > before && h_now_ms() < end)
		usleep(100 * 1000);
	ck_assert_int_eq(after, before);
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-c", f.cfg,
	    "stats", NULL }, NULL, NULL), 0);
	h_close(f.c);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
}
END_TEST

START_TEST(a_vhost_the_broker_refuses_is_an_error_not_a_retry)
{
	char url[256], env[300], *out;
	const char *p = strstr(h_url(), "@");
	int rc;

	snprintf(url, sizeof(url), "amqp://guest:guest%.*s/no-such-vhost",
	    (int)(strrchr(p, '/') - p), p);
	snprintf(env, sizeof(env), "RABBITMQ_URL=%s", url);
	rc = h_run((const char *[]){ h_bin("dlq-worker"), "--assert-only",
	    NULL }, (const char *[]){ env, NULL }, &out);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_ptr_nonnull(strstr(out, "\"event\":\"broker_refused\""));
	ck_assert_ptr_nonnull(strstr(out, "no-such-vhost"));
	free(out);
}
END_TEST

/* --assert-only against the TLS listener with `url` and `settings` (and
 * `env` when not NULL): it must exit `want`, 0 with the topology asserted
 * or 1 with the broker refused. Its output (malloc'd). */
static char *
assert_over_tls(const char *url, const char *settings, const char *env,
    int want)
{
	static const char *const q[] = { "tq", NULL };
	const char *cfg;
	char *out;
	int rc;

	h_set_broker(url, settings);
	cfg = h_setup("tls", q, NULL);
	rc = h_run((const char *[]){ h_bin("dlq-worker"), "-c", cfg,
	    "--assert-only", NULL }, (const char *[]){ env, NULL }, &out);
	ck_assert_msg(rc == want, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, want == 0 ?
	    "\"event\":\"topology_asserted\"" :
	    "\"event\":\"broker_refused\"") != NULL, "%s", out);
	return out;
}

/* A TLS server that is not the broker, on loopback `port`, with a
 * certificate for elsewhere.example signed by the test broker's CA
 * (scripts/broker.sh makes it next to the CA). */
static void
stand_in_tls_server(struct h_worker *w, int port)
{
	char accept[32];

	snprintf(accept, sizeof(accept), "127.0.0.1:%d", port);
	h_spawn(w, "/usr/bin/openssl", (const char *[]){ "s_server", "-quiet",
	    "-accept", accept, "-cert", h_tls_file("elsewhere.pem"), "-key",
	    h_tls_file("elsewhere.key"), NULL }, NULL);
	ck_assert(h_wait_listening(port, 10000));
}

/* A broker certificate that fails verification is a configuration error
 * said at once (retrying cannot fix it): not signed by a trusted CA, or
 * not for the host connected to; so is a CA file without a certificate.
 * A certificate for the IP address connected to is accepted. Without
 * rabbitmq.tls_ca_cert the system's CAs are trusted (SSL_CERT_FILE
 * stands in for them here). */
START_TEST(a_broker_certificate_that_fails_verification_stops_the_start)
{
	char ca[512], url[256], env[600], *out;
	const char *host = strstr(h_tls_url(), "@localhost:");
	struct h_worker other;
	int port = h_free_port();

	ck_assert_ptr_nonnull(host);
	snprintf(ca, sizeof(ca), "tls_ca_cert = \"%s\";", h_tls_ca());
	snprintf(env, sizeof(env), "SSL_CERT_FILE=%s", h_tls_ca());

	out = assert_over_tls(h_tls_url(), "", NULL, 1);
	ck_assert_ptr_nonnull(strstr(out, "certificate at localhost:"));
	ck_assert_ptr_nonnull(strstr(out, "is not trusted: "));
	ck_assert_ptr_nonnull(strstr(out, "rabbitmq.tls_ca_cert"));
	ck_assert_ptr_null(strstr(out, "broker_unavailable"));
	free(out);

	free(assert_over_tls(h_tls_url(), "", env, 0));

	/* the broker's certificate holds 127.0.0.1 as an IP address */
	snprintf(url, sizeof(url), "%.*s@127.0.0.1:%s",
	    (int)(host - h_tls_url()), h_tls_url(), host + strlen("@localhost:"));
	free(assert_over_tls(url, ca, NULL, 0));

	stand_in_tls_server(&other, port);
	snprintf(url, sizeof(url), "amqps://guest:guest@localhost:%d/", port);
	out = assert_over_tls(url, ca, NULL, 1);
	ck_assert_ptr_nonnull(strstr(out, "not for the host name 'localhost'"));
	ck_assert_ptr_null(strstr(out, "tls_unverified"));
	free(out);
	h_worker_stop(&other, 5000, NULL);

	/* a CA file that holds no certificate */
	snprintf(ca, sizeof(ca), "tls_ca_cert = \"%s\";",
	    h_write_file("not-a-ca.pem", "not a certificate\n"));
	out = assert_over_tls(h_tls_url(), ca, NULL, 1);
	ck_assert_ptr_nonnull(strstr(out, "not-a-ca.pem: no certificate"));
	free(out);

	/* told not to verify: it connects, and says what that risks */
	out = assert_over_tls(h_tls_url(), "tls_verify = false;", NULL, 0);
	ck_assert_ptr_nonnull(strstr(out, "\"event\":\"tls_unverified\""));
	free(out);
}
END_TEST

/* A broker that asks its clients for a certificate gets the configured
 * one (scripts/broker.sh makes it next to the CA); a key file others can
 * read is warned about, as the config file would be; an encrypted one is
 * refused at start, never a pass phrase prompt. */
START_TEST(a_client_certificate_is_presented_to_the_broker)
{
	const char *ca = h_tls_ca();
	char more[1200], conn[256], subject[256], key[512], *out;
	struct h_rig f;
	cJSON **ev;
	int n;

	snprintf(more, sizeof(more), "tls_ca_cert = \"%s\"; tls_cert = "
	    "\"%s\"; tls_key = \"%s\";", ca, h_tls_file("dlq-worker.pem"),
	    h_tls_file("dlq-worker.key"));
	h_set_broker(h_tls_url(), more);
	h_rig_name(&f, "mtls", 1);
	h_rig_setup(&f, NULL);
	h_rig_start(&f);
	snprintf(conn, sizeof(conn), "dlq-worker %s", f.dlq[0]);
	ck_assert_int_eq(h_connection_info(conn, "peer_cert_subject", subject,
	    sizeof(subject)), 1);
	ck_assert_str_eq(subject, "CN=dlq-worker");
	ev = h_worker_events(&f.w, "config_insecure", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_ptr_nonnull(strstr(h_jstr(ev[0], "path"), "/dlq-worker.key"));
	ck_assert_str_eq(h_jstr(ev[0], "mode"), "0644");
	h_events_free(ev, n);
	h_rig_stop(&f);

	/* an encrypted key: no pass phrase is asked for, the start stops */
	snprintf(key, sizeof(key), "%s", h_tmp_path("encrypted.key"));
	ck_assert_int_eq(h_run((const char *[]){ "/usr/bin/openssl", "pkey",
	    "-in", h_tls_file("dlq-worker.key"), "-aes256", "-passout", "pass:s3cret", "-out", key,
	    NULL }, NULL, &out), 0);
	free(out);
	snprintf(more, sizeof(more), "tls_ca_cert = \"%s\"; tls_cert = "
	    "\"%s\"; tls_key = \"%s\";", ca, h_tls_file("dlq-worker.pem"),
	    key);
	out = assert_over_tls(h_tls_url(), more, NULL, 1);
	ck_assert_msg(strstr(out, "the key is encrypted") != NULL, "%s", out);
	free(out);
}
END_TEST

/* Puts `text` in place of the file at `path` at once (write, rename), as
 * a rotation does. */
static void
replace_file(const char *path, const char *text)
{
	char tmp[600];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	ck_assert_ptr_nonnull(f = fopen(tmp, "w"));
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(rename(tmp, path), 0);
}

/* rabbitmq.auth = "external": the broker takes the user from the client
 * certificate's CN (the test node's ssl_cert_login_from), whatever the
 * URL says; a certificate naming no user is refused at start. */
START_TEST(a_client_certificate_logs_in_by_itself)
{
	const char *ca = h_tls_ca();
	const char *host = strstr(h_tls_url(), "@localhost:");
	char more[1200], url[256], conn[256], v[64], *out;
	struct h_rig f;

	h_broker_ctl((const char *[]){ "delete_user", "dlq-worker", NULL },
	    &out);	/* left by an earlier run that failed */
	free(out);
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "add_user", "dlq-worker",
	    "unused-Pw1", NULL }, &out), 0);
	free(out);
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "clear_password",
	    "dlq-worker", NULL }, &out), 0);
	free(out);
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "set_permissions", "-p",
	    "/", "dlq-worker", ".*", ".*", ".*", NULL }, &out), 0);
	free(out);
	snprintf(url, sizeof(url), "amqps://nobody:wrong%s", host);
	snprintf(more, sizeof(more), "auth = \"external\"; tls_ca_cert = "
	    "\"%s\"; tls_cert = \"%s\"; tls_key = \"%s\";", ca,
	    h_tls_file("dlq-worker.pem"), h_tls_file("dlq-worker.key"));
	h_set_broker(url, more);
	h_rig_name(&f, "ext", 1);
	h_rig_setup(&f, NULL);
	h_rig_start(&f);
	snprintf(conn, sizeof(conn), "dlq-worker %s", f.dlq[0]);
	ck_assert_int_eq(h_connection_info(conn, "user", v, sizeof(v)), 1);
	ck_assert_str_eq(v, "dlq-worker");
	ck_assert_int_eq(h_connection_info(conn, "auth_mechanism", v,
	    sizeof(v)), 1);
	ck_assert_str_eq(v, "EXTERNAL");
	h_rig_stop(&f);

	snprintf(more, sizeof(more), "auth = \"external\"; tls_ca_cert = "
	    "\"%s\"; tls_cert = \"%s\"; tls_key = \"%s\";", ca,
	    h_tls_file("elsewhere.pem"), h_tls_file("elsewhere.key"));
	out = assert_over_tls(url, more, NULL, 1);
	ck_assert_msg(strstr(out, "as the client certificate's user failed: ")
	    != NULL &&
	    strstr(out, "EXTERNAL") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "delete_user",
	    "dlq-worker", NULL }, &out), 0);
	free(out);
}
END_TEST

/* A CA file changed while the worker runs (a rotation) is read again
 * for the next connection: with a CA that did not sign the broker's
 * certificate the consumer cannot reconnect, and says why; with the
 * right one back it can. */
START_TEST(a_rotated_ca_file_is_read_again_for_the_next_connection)
{
	char *right = h_slurp(h_tls_ca()), *wrong, *out, more[600], port[16];
	char file[512], other[512], key[512];
	struct h_rig f;
	cJSON **ev;
	int i, n;
	bool said = false;

	snprintf(file, sizeof(file), "%s", h_tmp_path("rotating-ca.pem"));
	snprintf(other, sizeof(other), "%s", h_tmp_path("other-ca.pem"));
	snprintf(key, sizeof(key), "%s", h_tmp_path("other-ca.key"));
	replace_file(file, right);
	ck_assert_int_eq(h_run((const char *[]){ "/usr/bin/openssl", "req",
	    "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
	    "/CN=another CA", "-keyout", key, "-out", other, NULL }, NULL,
	    &out), 0);
	free(out);
	wrong = h_slurp(other);
	snprintf(more, sizeof(more), "tls_ca_cert = \"%s\";", file);
	h_set_broker(h_tls_url(), more);
	h_rig_name(&f, "rot", 1);
	h_rig_setup(&f, NULL);
	h_rig_start(&f);

	replace_file(file, wrong);
	snprintf(port, sizeof(port), "%d", h_port());
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash",
	    "scripts/broker.sh", "ctl", port, "close_all_connections",
	    "CA rotation test", NULL }, NULL, &out), 0);
	free(out);
	for (i = 1; !said && h_worker_wait(&f.w, "consumer_reconnecting", i,
	    WAIT_MS); i++) {
		ev = h_worker_events(&f.w, "consumer_reconnecting", &n);
		said = strstr(h_jstr(ev[n - 1], "error"), "is not trusted: ") !=
		    NULL;
		h_events_free(ev, n);
	}
	ck_assert_msg(said, "no reconnect said the certificate is not trusted");
	ck_assert_int_eq(h_worker_count(&f.w, "consumer_started"), 1);

	replace_file(file, right);
	ck_assert(h_worker_wait(&f.w, "consumer_started", 2, WAIT_MS));
	free(right);
	free(wrong);
	h_close(f.c);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
}
END_TEST

/* A cluster's node that does not answer (here the URL's: nothing listens
 * on its port) is passed over for the next of rabbitmq.hosts, said in a
 * broker_failover line; when none answers, each is named as written. */
START_TEST(a_node_that_does_not_answer_is_passed_over)
{
	int real = atoi(strrchr(h_url(), ':') + 1), dead = h_free_port();
	char url[96], more[96], want[96], env[2][96];
	struct h_worker w;
	struct h_rig f;
	cJSON **ev;
	int n;

	snprintf(url, sizeof(url), "amqp://guest:guest@127.0.0.1:%d/", dead);
	snprintf(more, sizeof(more), "hosts = [ \"localhost:%d\" ];", real);
	h_set_broker(url, more);
	h_rig_name(&f, "fo", 1);
	h_rig_setup(&f, NULL);
	h_rig_start(&f);
	h_publish(f.c, f.exch, f.q[0], "{}", 2, "via-another-node", NULL);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "worker_starting", &n);
	ck_assert_int_eq(n, 1);
	snprintf(want, sizeof(want), "localhost:%d", real);
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(ev[0],
	    "hosts"), 0)->valuestring, want);
	h_events_free(ev, n);
	ev = h_worker_events(&f.w, "broker_failover", &n);
	ck_assert_int_ge(n, 1);
	snprintf(want, sizeof(want), "localhost:%d", real);
	ck_assert_str_eq(h_jstr(ev[0], "node"), want);
	snprintf(want, sizeof(want), "cannot connect to 127.0.0.1:%d: "
	    "connection refused (", dead);
	ck_assert_msg(strncmp(h_jstr(ev[0], "unreachable"), want,
	    strlen(want)) == 0, "%s", h_jstr(ev[0], "unreachable"));
	h_events_free(ev, n);
	h_rig_stop(&f);

	snprintf(env[0], sizeof(env[0]), "RABBITMQ_URL=amqp://guest:guest@"
	    "127.0.0.1:%d/", dead);
	snprintf(env[1], sizeof(env[1]), "RABBITMQ_HOSTS= localhost:%d ,"
	    "[::1]:%d", dead, dead);
	h_worker_start(&w, (const char *[]){ "--assert-only", NULL },
	    (const char *[]){ env[0], env[1], NULL });
	ck_assert(h_worker_wait(&w, "broker_unavailable", 1, WAIT_MS));
	ev = h_worker_events(&w, "broker_unavailable", &n);
	snprintf(want, sizeof(want), "no node answered: cannot connect to "
	    "127.0.0.1:%d: ", dead);
	ck_assert_msg(strncmp(h_jstr(ev[0], "error"), want, strlen(want)) ==
	    0, "%s", h_jstr(ev[0], "error"));
	snprintf(want, sizeof(want), "; cannot connect to localhost:%d: "
	    "connection refused (", dead);
	ck_assert_ptr_nonnull(strstr(h_jstr(ev[0], "error"), want));
	/* an IPv6 address in brackets, as it was written */
	snprintf(want, sizeof(want), "; cannot connect to [::1]:%d: "
	    "connection refused (", dead);
	ck_assert_msg(strstr(h_jstr(ev[0], "error"), want) != NULL, "%s",
	    h_jstr(ev[0], "error"));
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_stop(&w, 5000, NULL), 0);
}
END_TEST

/* A broker that is not up yet (nothing listens on its port): the worker
 * waits with backoff, says so with the delay as a number, and a SIGTERM
 * ends the wait at once. */
START_TEST(a_broker_not_up_is_waited_for_until_stopped)
{
	struct h_worker w;
	char env[128];
	cJSON **ev;
	int64_t ms;
	int i, n;

	snprintf(env, sizeof(env), "RABBITMQ_URL=amqp://guest:s3cret@"
	    "127.0.0.1:%d/", h_free_port());
	h_worker_start(&w, (const char *[]){ "--assert-only", NULL },
	    (const char *[]){ env, NULL });
	ck_assert(h_worker_wait(&w, "broker_unavailable", 3, WAIT_MS));
	ev = h_worker_events(&w, "broker_unavailable", &n);
	for (i = 0; i < n; i++) {
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(ev[i],
		    "retry_in_ms")));
		ck_assert_int_gt(h_jnum(ev[i], "retry_in_ms"), 0);
		ck_assert_ptr_null(strstr(h_jstr(ev[i], "url"), "s3cret"));
		ck_assert_msg(strstr(h_jstr(ev[i], "error"), ": connection "
		    "refused (nothing listens on that port: is the broker "
		    "running, and is this its port?)") != NULL, "%s",
		    h_jstr(ev[i], "error"));
	}
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_stop(&w, 5000, &ms), 0);
	ck_assert_int_eq(h_worker_count(&w, "topology_asserted"), 0);

	/* a port that answers, but not in AMQP (the node's TLS listener
	 * given with amqp://): waited for too, and the error says what to
	 * look at */
	snprintf(env, sizeof(env), "RABBITMQ_URL=amqp://guest:guest@"
	    "127.0.0.1:%d/", h_port() + 1000);
	h_worker_start(&w, (const char *[]){ "--assert-only", NULL },
	    (const char *[]){ env, NULL });
	ck_assert(h_worker_wait(&w, "broker_unavailable", 1, WAIT_MS));
	ev = h_worker_events(&w, "broker_unavailable", &n);
	ck_assert_msg(strstr(h_jstr(ev[0], "error"), " (is the port an AMQP "
	    "listener? amqp:// is usually 5672, amqps:// 5671, the management "
	    "API 15672 is not one)") != NULL, "%s", h_jstr(ev[0], "error"));
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_stop(&w, 5000, &ms), 0);
}
END_TEST

START_TEST(a_broker_killed_mid_drain_loses_and_doubles_nothing)
{
	struct h_rig f;
	char port[16], *out;
	int n;
	const int N = 10000;

	setup_only(&f, NULL);
	h_close(f.c);
	h_fill_confirmed(f.dlq[0], N / 2, "k0");
	h_fill_confirmed(f.dlq[1], N / 2, "k1");
	h_rig_start(&f);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1000, 60000));
	snprintf(port, sizeof(port), "%d", h_port());
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash", "scripts/broker.sh",
	    "kill", port, NULL }, NULL, &out), 0);
	free(out);
	ck_assert(h_worker_wait(&f.w, "consumer_reconnecting", 2, WAIT_MS));
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash", "scripts/broker.sh",
	    "start", port, NULL }, NULL, &out), 0);
	free(out);
	/* both consumers come back by themselves and drain the rest */
	ck_assert(h_worker_wait(&f.w, "consumer_started", 4, 60000));
	ck_assert(h_wait_count(f.dlq[0], 0, 60000));
	ck_assert(h_wait_count(f.dlq[1], 0, 60000));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	n = rows(f.db, "");
	ck_assert_int_eq(n, N);
	ck_assert_int_eq(rows(f.db, "GROUP BY message_id HAVING count(*) > 1"),
	    -1);
}
END_TEST

/* scripts/broker.sh `cmd` (pause, resume) on the test broker. */
static void
broker_signal(const char *cmd)
{
	char port[16], *out;

	snprintf(port, sizeof(port), "%d", h_port());
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash", "scripts/broker.sh",
	    cmd, port, NULL }, NULL, &out), 0);
	free(out);
}

/* A broker that stops answering and closes nothing (its VM paused here;
 * a node swapping, a network dropping packets): the consumers find out
 * by the heartbeats (1 s), say so, try again with the reason (a login
 * nothing answers), and consume again by themselves once it answers.
 * A watchdog resumes the node even if the test dies before it does. */
START_TEST(a_broker_gone_silent_is_found_by_heartbeats_and_waited_for)
{
	struct h_rig f;
	char watchdog[160], *out;
	cJSON **ev;
	int i, n;
	bool said;

	h_set_heartbeat(1);
	setup_only(&f, NULL);
	h_close(f.c);
	h_rig_start(&f);
	snprintf(watchdog, sizeof(watchdog), "(sleep 60; scripts/broker.sh "
	    "resume %d) >/dev/null 2>&1 &", h_port());
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash", "-c", watchdog,
	    NULL }, NULL, &out), 0);
	free(out);
	broker_signal("pause");
	ck_assert(h_worker_wait(&f.w, "consumer_error", 2, WAIT_MS));
	ev = h_worker_events(&f.w, "consumer_error", &n);
	for (i = 0; i < n; i++)
		ck_assert_str_eq(h_jstr(ev[i], "error"),
		    "heartbeat timeout, connection closed");
	h_events_free(ev, n);
	/* each try again waits for a login nothing answers, and says so */
	ck_assert(h_worker_wait(&f.w, "consumer_reconnecting", 4, 60000));
	ev = h_worker_events(&f.w, "consumer_reconnecting", &n);
	for (i = 0, said = false; i < n; i++)
		said |= strstr(h_jstr(ev[i], "error"), "nothing answered: a "
		    "broker frozen or overloaded") != NULL;
	h_events_free(ev, n);
	ck_assert(said);
	broker_signal("resume");
	ck_assert(h_worker_wait(&f.w, "consumer_started", 4, 60000));
	h_fill_confirmed(f.dlq[0], 3, "after");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert_int_eq(rows(f.db, ""), 3);
}
END_TEST

static bool
memory_alarm_on(void)
{
	char *out = NULL;
	bool on;

	h_broker_ctl((const char *[]){ "eval", "rabbit_alarm:get_alarms().",
	    NULL }, &out);
	on = out != NULL && strstr(out, "memory") != NULL;
	free(out);
	return on;
}

/* A memory alarm: watermark 0 blocks every publishing connection. */
static void
set_alarm(bool on)
{
	char *out;
	int64_t end = h_now_ms() + WAIT_MS;

	ck_assert_int_eq(h_broker_ctl((const char *[]){
	    "set_vm_memory_high_watermark", on ? "0" : "0.4", NULL }, &out), 0);
	free(out);
	while (memory_alarm_on() != on && h_now_ms() < end)
		usleep(100 * 1000);
	ck_assert(memory_alarm_on() == on);
}

/* Whatever a test did, the node leaves this test case unblocked. */
static void
clear_alarm(void)
{
	char *out = NULL;

	h_broker_ctl((const char *[]){ "set_vm_memory_high_watermark", "0.4",
	    NULL }, &out);
	free(out);
}

/* A broker user "<stem><pid>" (password "pw") with the configure, write
 * and read permissions given on vhost /; `env` gets the RABBITMQ_URL=
 * that logs in as it. */
static void
add_broker_user(const char *stem, const char *configure, const char *write,
    const char *read, char user[64], char env[320])
{
	char *out;

	snprintf(user, 64, "%s%d", stem, (int)getpid());
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "add_user", user, "pw",
	    NULL }, &out), 0);
	free(out);
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "set_permissions", "-p",
	    "/", user, configure, write, read, NULL }, &out), 0);
	free(out);
	snprintf(env, 320, "RABBITMQ_URL=amqp://%s:pw%s", user,
	    strstr(h_url(), "@"));
}

static void
delete_broker_user(const char *user)
{
	char *out;

	h_broker_ctl((const char *[]){ "delete_user", user, NULL }, &out);
	free(out);
}

/* A DLQ the worker may not declare (its user lacks configure rights on
 * *.dlq) is missing at start: the worker reports it, runs the other
 * consumer, retries with backoff, and consumes it once someone else
 * declares it. */
START_TEST(a_dlq_missing_at_start_is_consumed_once_declared)
{
	struct h_rig f;
	char user[64], env[320];
	amqp_connection_state_t c;
	cJSON **ev;
	int n, i;

	add_broker_user("m", "^(?!.*\\.dlq$).*", ".*", ".*", user, env);
	setup_only(&f, NULL);
	c = h_connect();
	amqp_queue_delete(c, 1, amqp_cstring_bytes(f.dlq[1]), 0, 0);
	ck_assert_int_eq(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
	h_close(c);
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL },
	    (const char *[]){ env, NULL });
	ck_assert(h_worker_wait(&f.w, "consumer_started", 1, WAIT_MS));
	ck_assert(h_worker_wait(&f.w, "consume_failed", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "consume_failed", &n);
	ck_assert_str_eq(h_jstr(ev[0], "dlq"), f.dlq[1]);
	ck_assert_ptr_nonnull(strstr(h_jstr(ev[0], "error"), "NOT_FOUND"));
	h_events_free(ev, n);
	/* the refused declarations are looked at, not one error each: the
	 * DLQ that is there is fine, the one that is not is named */
	ck_assert_int_eq(h_worker_count(&f.w, "topology_error"), 0);
	ev = h_worker_events(&f.w, "topology_not_permitted", &n);
	ck_assert_int_ge(n, 1);
	ck_assert_str_eq(h_jstr(ev[0], "level"), "warn");
	ck_assert_int_eq(h_jnum(ev[0], "refused"), 2);
	ck_assert_int_eq(h_jnum(ev[0], "present"), 1);
	ck_assert_int_eq(h_jnum(ev[0], "missing"), 1);
	ck_assert_int_eq(h_jnum(ev[0], "bindings_unchecked"), 0);
	ck_assert_ptr_nonnull(strstr(h_jstr(ev[0], "error"), user));
	h_events_free(ev, n);
	ev = h_worker_events(&f.w, "topology_missing", &n);
	ck_assert_int_ge(n, 1);
	ck_assert_str_eq(h_jstr(ev[0], "object"), "queue");
	ck_assert_str_eq(h_jstr(ev[0], "name"), f.dlq[1]);
	h_events_free(ev, n);
	/* and on-call hears why it stays missing */
	ck_assert(h_worker_wait(&f.w, "alert_digest", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "alert_digest", &n);
	ck_assert_msg(strstr(h_jstr(ev[0], "text"), f.dlq[1]) &&
	    strstr(h_jstr(ev[0], "text"), "may not declare it"), "%s",
	    h_jstr(ev[0], "text"));
	h_events_free(ev, n);
	/* someone with the rights declares it (here: dlqctl as guest) */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "topology", "assert", NULL }), 0);
	ck_assert(h_worker_wait(&f.w, "consumer_started", 2, WAIT_MS));
	/* waiting was backed off, not a busy loop */
	ck_assert_int_le(h_worker_count(&f.w, "consume_failed"), 10);
	for (i = 0; i < 2; i++)
		h_publish(f.c, "", f.dlq[1], "{}", 2, i ? "late-1" : "late-0",
		    NULL);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 2, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	h_close(f.c);
	delete_broker_user(user);
}
END_TEST

/* Whether a line of a logged digest names `name` and holds `phrase`,
 * waited for up to `timeout_ms`. */
static bool
digest_line_with(struct h_worker *w, const char *name, const char *phrase,
    int timeout_ms)
{
	int64_t deadline = h_now_ms() + timeout_ms;
	const char *text, *at, *line, *end;
	bool found = false;
	cJSON **ev;
	int n, i;

	do {
		ev = h_worker_events(w, "alert_digest", &n);
		for (i = 0; i < n && !found; i++) {
			text = h_jstr(ev[i], "text");
			for (at = text; !found && (at = strstr(at, name)) != NULL;
			    at += strlen(name)) {
				for (line = at; line > text && line[-1] != '\n';)
					line--;
				end = strchrnul(at, '\n');
				found = memmem(line, (size_t)(end - line), phrase,
				    strlen(phrase)) != NULL;
			}
		}
		h_events_free(ev, n);
	} while (!found && h_now_ms() < deadline && usleep(100000) == 0);
	return found;
}

/* Two DLQs deleted at once under a broker user that may declare one of
 * them again and not the other: the digest tells each one's fate, not
 * the first one's for both. */
START_TEST(two_deleted_dlqs_are_each_told_their_own_fate)
{
	struct h_rig f;
	char user[64], env[320];
	bool missing;
	cJSON **ev;
	int n, i;

	add_broker_user("p", "^(?!.*_q1\\.dlq$).*", ".*", ".*", user, env);
	setup_only(&f, "alert = { cooldown_ms = 0; };");
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL },
	    (const char *[]){ env, NULL });
	ck_assert(h_worker_wait(&f.w, "consumer_started", 2, WAIT_MS));
	ck_assert_int_eq(h_worker_count(&f.w, "topology_missing"), 0);
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(f.dlq[1]), 0, 0);
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(f.dlq[0]), 0, 0);
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	ck_assert(h_worker_wait(&f.w, "consumer_cancelled", 2, WAIT_MS));
	ck_assert_msg(digest_line_with(&f.w, f.dlq[1], "may not declare it",
	    WAIT_MS), "no digest line says %s may not be declared", f.dlq[1]);
	/* the first DLQ is consumed again; its consumer found it missing
	 * (NOT_FOUND) unless the assert for the other one declared it
	 * first, and then the digest says it was declared again, never what
	 * the other one's line says */
	ck_assert(h_worker_wait(&f.w, "consumer_started", 3, WAIT_MS));
	ck_assert_int_ge(h_count(f.dlq[0]), 0);
	ck_assert_int_eq(h_count(f.dlq[1]), -1);
	ev = h_worker_events(&f.w, "consume_failed", &n);
	for (i = 0, missing = false; i < n; i++)
		missing |= strcmp(h_jstr(ev[i], "dlq"), f.dlq[0]) == 0 &&
		    strstr(h_jstr(ev[i], "error"), "NOT_FOUND") != NULL;
	h_events_free(ev, n);
	if (missing)
		ck_assert_msg(digest_line_with(&f.w, f.dlq[0],
		    "declared again", WAIT_MS), "no digest line says %s was "
		    "declared again", f.dlq[0]);
	ck_assert(!digest_line_with(&f.w, f.dlq[0], "may not declare", 0));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	h_close(f.c);
	delete_broker_user(user);
}
END_TEST

/* The event `event` among the JSON log lines of `out`; NULL if none. */
static cJSON *
logged(const char *out, const char *event)
{
	char key[96];
	const char *p, *end;
	char *line;
	cJSON *j;

	snprintf(key, sizeof(key), "\"event\":\"%s\"", event);
	if ((p = strstr(out, key)) == NULL)
		return NULL;
	while (p > out && p[-1] != '\n')
		p--;
	end = strchr(p, '\n');
	line = strndup(p, end != NULL ? (size_t)(end - p) : strlen(p));
	j = cJSON_Parse(line);
	free(line);
	return j;
}

/* Least privilege: a broker user that may only read (no configure, no
 * write), the topology declared by someone else. Its refused
 * declarations are looked at, not reported one error each (bindings
 * through the management API, a missing one in the digest); the worker
 * consumes and archives as usual. */
START_TEST(a_read_only_user_checks_the_topology_and_consumes)
{
	struct h_rig f;
	char user[64], env[320], mgmt[300], dlx[160], name[400];
	char *out, *err;
	cJSON **ev, *j;
	int n, rc;

	add_broker_user("r", "^$", "^$", ".*", user, env);
	setup_only(&f, NULL);

	/* asked to assert, it could not: exit 3, with what it found */
	rc = h_run((const char *[]){ h_bin("dlq-worker"), "-c", f.cfg,
	    "--assert-only", NULL }, (const char *[]){ env, NULL }, &out);
	ck_assert_msg(rc == 3, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "topology_error") == NULL, "%s", out);
	ck_assert_ptr_nonnull(j = logged(out, "topology_not_permitted"));
	/* 2 exchanges and the 2 work queues and their 2 DLQs, found; the 4
	 * bindings refused (no write permission) and not to be looked at */
	ck_assert_int_eq(h_jnum(j, "present"), 6);
	ck_assert_int_eq(h_jnum(j, "missing"), 0);
	ck_assert_int_eq(h_jnum(j, "bindings_unchecked"), 4);
	ck_assert_int_eq(h_jnum(j, "refused"), 10);
	ck_assert_str_eq(h_jstr(j, "level"), "warn");
	ck_assert_ptr_nonnull(strstr(h_jstr(j, "error"), "ACCESS_REFUSED"));
	cJSON_Delete(j);
	ck_assert_ptr_nonnull(j = logged(out, "topology_asserted"));
	ck_assert_int_eq(h_jnum(j, "errors"), 0);
	ck_assert_int_eq(h_jnum(j, "refused"), 10);
	cJSON_Delete(j);
	free(out);
	rc = h_run((const char *[]){ h_bin("dlqctl"), "-c", f.cfg, "topology",
	    "assert", NULL }, (const char *[]){ env, NULL }, &out);
	ck_assert_msg(rc == 3 && strstr(out, "not permitted: 10 declarations "
	    "refused") && strstr(out, "6 found and 0 missing; 4 bindings "
	    "unchecked"), "exit %d: %s", rc, out);
	free(out);

	/* the bindings are looked for through the management API: one
	 * removed (its dead letters would be dropped) is named */
	snprintf(dlx, sizeof(dlx), "%s_dlx", f.prefix);
	amqp_queue_unbind(f.c, 1, amqp_cstring_bytes(f.dlq[1]),
	    amqp_cstring_bytes(dlx), amqp_cstring_bytes(f.q[1]),
	    amqp_empty_table);
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "set_user_tags", user,
	    "monitoring", NULL }, &out), 0);
	free(out);
	snprintf(mgmt, sizeof(mgmt), "RABBITMQ_MANAGEMENT_URL=%s",
	    h_mgmt_url());
	rc = h_run_split((const char *[]){ h_bin("dlqctl"), "-c", f.cfg,
	    "topology", "assert", NULL }, (const char *[]){ env, mgmt, NULL },
	    &out, &err);
	ck_assert_msg(rc == 3 && strstr(out, "9 found and 1 missing; 0 "
	    "bindings unchecked"), "exit %d: %s", rc, out);
	ck_assert_ptr_nonnull(j = logged(err, "topology_missing"));
	ck_assert_str_eq(h_jstr(j, "object"), "binding");
	snprintf(name, sizeof(name), "%s -> %s", dlx, f.dlq[1]);
	ck_assert_str_eq(h_jstr(j, "name"), name);
	cJSON_Delete(j);
	free(out);
	free(err);

	/* the worker runs with it: every consumer starts, dead letters are
	 * archived and acked, and on-call hears of the missing binding */
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL },
	    (const char *[]){ env, mgmt, NULL });
	ck_assert(h_worker_wait(&f.w, "consumer_started", 2, WAIT_MS));
	ck_assert_int_eq(h_worker_count(&f.w, "topology_error"), 0);
	ck_assert_int_eq(h_worker_count(&f.w, "topology_missing"), 1);
	h_publish(f.c, f.exch, f.q[0], "{}", 2, "least-privilege", NULL);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ck_assert(h_worker_wait(&f.w, "alert_digest", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "alert_digest", &n);
	snprintf(name, sizeof(name), "binding %s -> %s missing", dlx,
	    f.dlq[1]);
	ck_assert_msg(strstr(h_jstr(ev[0], "text"), "DLQ missing") &&
	    strstr(h_jstr(ev[0], "text"), name), "%s", h_jstr(ev[0], "text"));
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert_int_eq(rows(f.db, "WHERE message_id = 'least-privilege'"), 1);
	ck_assert_int_eq(h_count(f.dlq[0]), 0);
	h_close(f.c);
	delete_broker_user(user);
}
END_TEST

START_TEST(a_broker_alarm_stops_replay_clearly_and_draining_goes_on)
{
	struct h_rig f;
	char ids[3][24];
	amqp_table_entry_t e;
	amqp_table_t h = { 1, &e };
	cJSON *j, *l;
	int64_t t0;
	int i, rc;

	setup_only(&f, NULL);
	h_rig_start(&f);
	e.key = amqp_cstring_bytes("x-error");
	e.value.kind = AMQP_FIELD_KIND_UTF8;
	e.value.value.bytes = amqp_cstring_bytes("upstream timeout");
	for (i = 0; i < 3; i++) {
		snprintf(ids[i], sizeof(ids[i]), "al-%d", i);
		h_publish(f.c, f.exch, f.q[0], "{}", 2, ids[i], &h);
	}
	ck_assert_int_eq(h_reject(f.c, f.q[0], 3, WAIT_MS), 3);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	h_close(f.c);
	h_fill_confirmed(f.dlq[1], 300, "al");

	set_alarm(true);
	/* consumers are not blocked: the backlog drains during the alarm */
	h_rig_start(&f);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 300, 60000));
	ck_assert_int_eq(rows(f.db, ""), 303);

	/* a replay does not hang: the first message waits for its confirm
	 * (unknown: the broker may deliver it later), the rest is not sent */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &l, (const char *[]){ "list",
	    "--queue", f.q[0], NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(l), 3);
	for (i = 0; i < 3; i++)
		snprintf(ids[i], sizeof(ids[i]), "%lld", (long long)h_jnum(
		    cJSON_GetArrayItem(l, 2 - i), "id"));
	cJSON_Delete(l);
	t0 = h_now_ms();
	rc = h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "replay", ids[0],
	    ids[1], ids[2], "--rate", "0", "--execute", "--reason", "alarm",
	    NULL });
	ck_assert_int_lt(h_now_ms() - t0, 30000);
	ck_assert_int_eq(rc, 1);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "broker_blocked")));
	ck_assert_int_eq(h_jnum(j, "published"), 0);
	ck_assert_int_eq(h_jnum(j, "unknown"), 1);
	ck_assert_int_eq(h_jnum(j, "not_sent"), 2);
	cJSON_Delete(j);
	ck_assert_int_eq(rows(f.db, "WHERE status = 'replaying'"), 1);

	/* when the alarm clears, the two not sent go out normally */
	set_alarm(false);
	rc = h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "replay", ids[1],
	    ids[2], "--execute", "--reason", "alarm over", NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(h_jnum(j, "published"), 2);
	cJSON_Delete(j);
	/* the unknown one may arrive when the alarm clears, or never (the
	 * broker had not read it, and the connection that held it is
	 * closed): an operator who finds it arrived closes its record
	 * without sending it again, and it can no longer be replayed by
	 * accident */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "drop",
	    ids[0], "--reason", "arrived: it is in the work queue", NULL }),
	    0);
	ck_assert_int_eq(h_jnum(j, "changed"), 1);
	cJSON_Delete(j);
	ck_assert_int_eq(rows(f.db, "WHERE status = 'replaying'"), 0);
	rc = h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "replay", ids[0],
	    "--force", "--execute", "--reason", "again?", NULL });
	ck_assert_int_eq(rc, 3);
	ck_assert_int_eq(h_jnum(j, "published"), 0);
	ck_assert_int_eq(h_jnum(j, "refused"), 1);
	cJSON_Delete(j);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
}
END_TEST

/* 100 000 dead letters as fast as the broker makes them (expiration 0 in
 * 37 work queues), while the webhook is down the whole time: all
 * archived once, memory bounded, no more than one POST a second, and one
 * digest with all of them once the webhook is back. */
START_TEST(a_flood_with_the_webhook_down_loses_nothing_and_sends_one_digest)
{
	enum { NQ = 37, N = 100000 };
	struct h_receiver *r = h_receiver_start();
	static char names[NQ][96];
	const char *queues[NQ + 1];
	char prefix[64], exch[96], extra[512], id[32];
	amqp_basic_properties_t props;
	amqp_connection_state_t c;
	struct h_request q;
	struct h_worker w;
	int64_t t0, down_ms;
	long rss;
	int i, posts, ok = -1;
	char db[256];
	bool san = h_sanitized();

	h_name(prefix, sizeof(prefix), "fl");
	for (i = 0; i < NQ; i++) {
		snprintf(names[i], sizeof(names[i]), "%s_q%02d", prefix, i);
		queues[i] = names[i];
	}
	queues[NQ] = NULL;
	snprintf(exch, sizeof(exch), "%s_x", prefix);
	snprintf(db, sizeof(db), "%s-archive.db", h_tmp_path(prefix));
	snprintf(extra, sizeof(extra), "archive = { path = \"%s\"; };\n"
	    "alert = { webhook_url = \"%s\"; cooldown_ms = 600000; "
	    "timeout_ms = 2000; threshold = 0; max_age_ms = 0; };\n", db,
	    h_receiver_url(r, "/hook/flood"));
	h_receiver_down(r, 503, 1);
	h_worker_start(&w, (const char *[]){ "-c", h_setup(prefix, queues,
	    extra), NULL }, NULL);
	ck_assert(h_worker_wait(&w, "consumer_started", NQ, 60000));

	c = h_connect();
	memset(&props, 0, sizeof(props));
	props._flags = AMQP_BASIC_EXPIRATION_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
	props.expiration = amqp_cstring_bytes("0");
	t0 = h_now_ms();
	for (i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "fl-%d", i);
		props.message_id = amqp_cstring_bytes(id);
		ck_assert_int_eq(amqp_basic_publish(c, 1, amqp_cstring_bytes(exch),
		    amqp_cstring_bytes(names[i % NQ]), 0, 0, &props,
		    amqp_cstring_bytes("{\"to\":\"+15550100999\"}")), 0);
	}
	h_close(c);
	while (rows(db, "") < N && h_now_ms() - t0 < 400000)
		usleep(250 * 1000);
	ck_assert_int_eq(rows(db, ""), N);
	ck_assert_int_eq(rows(db, "GROUP BY message_id HAVING count(*) > 1"),
	    -1);
	/* a flood is no archive failure: the writers never time out */
	ck_assert_int_eq(h_worker_count(&w, "archive_error"), 0);
	for (i = 0; i < NQ; i++) {
		char dlq[110];
		snprintf(dlq, sizeof(dlq), "%.96s.dlq", names[i]);
		ck_assert_int_eq(h_count(dlq), 0);
	}
	/* memory: docs/operations.md states what the benchmark measured (23 MiB);
	 * the bound leaves more than twice that, and sanitizer builds
	 * carry their shadow memory on top */
	rss = h_worker_kib(&w, "VmHWM:");
	ck_assert_msg(rss > 0 && rss < (san ? 1024 : 64) * 1024L,
	    "peak RSS %ld KiB", rss);
	/* once every queue is quiet, what the flood needed goes back: the
	 * read buffers of the connections (replaced), the archive's page
	 * cache (2 MiB when full) and malloc's free memory; 2 MiB with this
	 * test's small dead letters. Sanitizers bring their own allocator,
	 * which keeps it. */
	ck_assert(h_worker_wait(&w, "memory_released", 1, WAIT_MS));
	if (!san)
		ck_assert_msg(h_worker_kib(&w, "VmRSS:") < rss - 1024,
		    "RSS %ld KiB after the release, peak %ld KiB",
		    h_worker_kib(&w, "VmRSS:"), rss);

	/* the webhook was down all along: at most one try a second */
	down_ms = h_now_ms() - t0;
	posts = h_receiver_count(r);
	ck_assert_int_ge(posts, 1);
	ck_assert_int_le(posts, down_ms / 1000 + 2);
	h_receiver_down(r, 0, 0);
	ck_assert(h_receiver_wait(r, posts + 1, 30000));
	for (i = posts; i < h_receiver_count(r) && ok < 0; i++) {
		q = h_receiver_get(r, i);
		if (q.status == 200)
			ok = i;
		/* one cause (expired, no error header) in every queue: one
		 * line, not 37 that the text's limit would cut short */
		if (ok >= 0) {
			ck_assert_msg(strstr(q.body, "100000 dead letters in 37 "
			    "groups") != NULL, "%s", q.body);
			ck_assert_msg(strstr(q.body, "37 queues") != NULL, "%s",
			    q.body);
			ck_assert_msg(strstr(q.body, "more groups") == NULL,
			    "%s", q.body);
		}
		free(q.body);
	}
	ck_assert_int_ge(ok, 0);
	/* and then quiet: the cooldown holds */
	ck_assert(!h_receiver_wait(r, ok + 2, 2000));
	ck_assert_int_eq(h_worker_stop(&w, 20000, NULL), 0);
	h_receiver_stop(r);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("faults");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, a_deleted_dlq_is_declared_again_and_consumed);
	tcase_add_test(tc, a_deleted_dlq_is_waited_for_without_reassert);
	tcase_add_test(tc,
	    dead_letters_of_a_gap_without_dlq_wait_in_an_at_least_once_queue);
	tcase_add_test(tc, a_broker_killed_mid_drain_loses_and_doubles_nothing);
	tcase_add_test(tc,
	    a_broker_gone_silent_is_found_by_heartbeats_and_waited_for);
	tcase_add_test(tc, sigterm_under_load_finishes_cleanly_and_twice_exits_at_once);
	tcase_add_test(tc, no_secret_or_masked_value_in_logs_or_webhooks);
	tcase_add_test(tc, an_archive_others_can_read_is_warned_about);
	tcase_add_test(tc, control_socket_abuse_leaks_no_descriptors);
	tcase_add_test(tc, a_vhost_the_broker_refuses_is_an_error_not_a_retry);
	tcase_add_test(tc,
	    a_broker_certificate_that_fails_verification_stops_the_start);
	tcase_add_test(tc, a_client_certificate_is_presented_to_the_broker);
	tcase_add_test(tc, a_client_certificate_logs_in_by_itself);
	tcase_add_test(tc,
	    a_rotated_ca_file_is_read_again_for_the_next_connection);
	tcase_add_test(tc, a_broker_not_up_is_waited_for_until_stopped);
	tcase_add_test(tc, a_node_that_does_not_answer_is_passed_over);
	tcase_add_test(tc, a_dlq_missing_at_start_is_consumed_once_declared);
	tcase_add_test(tc, two_deleted_dlqs_are_each_told_their_own_fate);
	tcase_add_test(tc, a_read_only_user_checks_the_topology_and_consumes);
	suite_add_tcase(s, tc);
	tc = tcase_create("flood");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc,
	    a_flood_with_the_webhook_down_loses_nothing_and_sends_one_digest);
	suite_add_tcase(s, tc);
	/* its own case: the alarm is cleared after it, pass or fail */
	tc = tcase_create("alarm");
	tcase_set_timeout(tc, 180);
	tcase_add_unchecked_fixture(tc, NULL, clear_alarm);
	tcase_add_test(tc, a_broker_alarm_stops_replay_clearly_and_draining_goes_on);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
