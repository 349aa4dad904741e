/* check_redrive.c - the case workflow beyond a manual replay, against the
 * real worker and broker: automatic redrive with its stops and circuit,
 * and the canary replay. The test plays the consumer of the work queue:
 * it accepts what was redriven (basic.get + ack) or rejects it, so the
 * broker dead-letters it again through the real path. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_main.h"
#include "harness.h"

#define WAIT_MS		20000
#define TRANSIENT	"upstream timeout after 30000 ms"
#define VALIDATION	"schema validation failed: missing field amount"

struct fixture {
	struct h_rig		 rig;	/* one queue */
	int			 dead;	/* dead letters logged so far */
	int			 seq;
};

static void
start(struct fixture *f, const char *extra_fmt)
{
	char extra[1024];

	memset(f, 0, sizeof(*f));
	h_rig_name(&f->rig, "rd", 1);
	/* extra_fmt may name the queue with %1$s */
	snprintf(extra, sizeof(extra), extra_fmt, f->rig.q[0]);
	h_rig_setup(&f->rig, extra);
	h_rig_start(&f->rig);
}

/* n messages failing with `error` die through the broker's real path. */
static void
die(struct fixture *f, int n, const char *error)
{
	amqp_table_entry_t e;
	amqp_table_t h = { 1, &e };
	char id[160];
	int i;

	e.key = amqp_cstring_bytes("x-error");
	e.value.kind = AMQP_FIELD_KIND_UTF8;
	e.value.value.bytes = amqp_cstring_bytes(error);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-m%d", f->rig.prefix, f->seq++);
		h_publish(f->rig.c, f->rig.exch, f->rig.q[0], "{\"amount\":1}",
		    12, id, &h);
	}
	ck_assert_int_eq(h_reject(f->rig.c, f->rig.q[0], n, WAIT_MS), n);
	f->dead += n;
	ck_assert(h_worker_wait(&f->rig.w, "dead_letter", f->dead, WAIT_MS));
}

/* The test's consumer fails n redriven messages again, with the same
 * error, as an application that sets an error header does: a reject
 * carries no header (and a redrive does not send the old error), so it
 * takes each and publishes it to the dead-letter exchange with its
 * headers and a new x-error. */
static void
reject_again(struct fixture *f, int n)
{
	amqp_table_entry_t h[32];
	amqp_basic_properties_t p;
	amqp_message_t m;
	char dlx[128];
	int i, k;

	snprintf(dlx, sizeof(dlx), "%s_dlx", f->rig.prefix);
	for (i = 0; i < n; i++) {
		ck_assert(h_get(f->rig.c, f->rig.q[0], &m, WAIT_MS));
		p = m.properties;
		ck_assert_int_lt(p.headers.num_entries, 31);
		for (k = 0; k < p.headers.num_entries; k++)
			h[k] = p.headers.entries[k];
		h[k].key = amqp_cstring_bytes("x-error");
		h[k].value.kind = AMQP_FIELD_KIND_UTF8;
		h[k].value.value.bytes = amqp_cstring_bytes(TRANSIENT);
		p.headers = (amqp_table_t){ k + 1, h };
		p._flags |= AMQP_BASIC_HEADERS_FLAG;
		ck_assert_int_eq(amqp_basic_publish(f->rig.c, 1,
		    amqp_cstring_bytes(dlx), amqp_cstring_bytes(f->rig.q[0]), 0,
		    0, &p, m.body), 0);
		amqp_destroy_message(&m);
	}
	f->dead += n;
	ck_assert(h_worker_wait(&f->rig.w, "dead_letter", f->dead, WAIT_MS));
}

static cJSON *
ctl(struct fixture *f, int want_rc, const char *const *args)
{
	cJSON *j = NULL;

	ck_assert_int_eq(h_dlqctl(f->rig.cfg, NULL, &j, args), want_rc);
	return j;
}

static cJSON *
show(struct fixture *f, int64_t id)
{
	char s[24];

	snprintf(s, sizeof(s), "%lld", (long long)id);
	return ctl(f, 0, (const char *[]){ "show", s, NULL });
}

/* Every archived record of this test, oldest first. */
static cJSON *
records(struct fixture *f)
{
	cJSON *l = ctl(f, 0, (const char *[]){ "list", "--queue", f->rig.q[0],
	    "--limit", "1000", NULL }), *r = cJSON_CreateArray(), *e;
	int i;

	for (i = cJSON_GetArraySize(l) - 1; i >= 0; i--) {
		e = cJSON_GetArrayItem(l, i);
		cJSON_AddItemToArray(r, show(f, h_jnum(e, "id")));
	}
	cJSON_Delete(l);
	return r;
}

/* Waits digest by digest until one holds `what`. */
static void
wait_digest_with(struct fixture *f, const char *what)
{
	ck_assert_msg(h_wait_digests_with(&f->rig.w, what, NULL, 1, WAIT_MS),
	    "no digest with '%s'", what);
}

START_TEST(transient_dead_letters_are_redriven_once_and_end_resolved)
{
	struct fixture f;
	amqp_message_t m;
	cJSON *all, *r, *a;
	int i, redriven = 0, untouched = 0;

	start(&f, "redrive = { queues = [ \"%1$s\" ]; min_age_ms = 1500; "
	    "interval_ms = 200; watch_ms = 1000; };\n"
	    "alert = { cooldown_ms = 200; threshold = 0; max_age_ms = 0; };");
	die(&f, 3, TRANSIENT);
	die(&f, 2, VALIDATION);
	ck_assert(h_worker_wait(&f.rig.w, "redrive_tick", 1, WAIT_MS));
	/* the consumer works again: it takes each redriven message once */
	for (i = 0; i < 3; i++) {
		ck_assert(h_get(f.rig.c, f.rig.q[0], &m, WAIT_MS));
		amqp_destroy_message(&m);
	}
	/* watched for a second, a few ticks more: nothing else goes out */
	ck_assert(!h_get(f.rig.c, f.rig.q[0], &m, 2000));
	all = records(&f);
	ck_assert_int_eq(cJSON_GetArraySize(all), 5);
	cJSON_ArrayForEach(r, all) {
		a = cJSON_GetObjectItem(r, "attempts");
		if (strcmp(h_jstr(r, "class"), "transient") == 0) {
			ck_assert_str_eq(h_jstr(r, "status"), "replayed");
			ck_assert_int_eq(cJSON_GetArraySize(a), 1);
			a = cJSON_GetArrayItem(a, 0);
			ck_assert_str_eq(h_jstr(a, "actor"), "dlq-worker");
			ck_assert_str_eq(h_jstr(a, "outcome"), "published");
			ck_assert_ptr_nonnull(strstr(h_jstr(a, "evidence"),
			    "redrive.classes"));
			/* not before min_age */
			ck_assert_int_ge(h_jnum(a, "started_at") -
			    h_jnum(r, "received_at"), 1500);
			redriven++;
		} else {
			ck_assert_str_eq(h_jstr(r, "class"), "validation");
			ck_assert_str_eq(h_jstr(r, "status"), "open");
			ck_assert_int_eq(cJSON_GetArraySize(a), 0);
			ck_assert(cJSON_IsNull(cJSON_GetObjectItem(r,
			    "redrive_note")));
			untouched++;
		}
	}
	ck_assert_int_eq(redriven, 3);
	ck_assert_int_eq(untouched, 2);
	cJSON_Delete(all);
	/* audited as the worker */
	r = ctl(&f, 0, (const char *[]){ "audit", NULL });
	i = 0;
	cJSON_ArrayForEach(a, r)
		i += strcmp(h_jstr(a, "command"), "redrive") == 0 &&
		    strcmp(h_jstr(a, "actor"), "dlq-worker") == 0;
	ck_assert_int_ge(i, 1);
	cJSON_Delete(r);
	r = ctl(&f, 0, (const char *[]){ "stats", NULL });
	ck_assert_int_eq(h_jnum(cJSON_GetObjectItem(cJSON_GetObjectItem(r,
	    "redrive"), "outcomes"), "published"), 3);
	cJSON_Delete(r);
	h_rig_stop(&f.rig);
}
END_TEST

START_TEST(a_consumer_that_keeps_rejecting_is_left_to_a_human)
{
	struct fixture f;
	cJSON *all, *last, *lin, *ev;
	int n;

	/* the circuit never trips here (trip_ratio 1.0): max_cycles stops */
	start(&f, "redrive = { queues = [ \"%1$s\" ]; min_age_ms = 0; "
	    "interval_ms = 200; watch_ms = 0; max_cycles = 2; trip_ratio = 1.0; "
	    "};\nalert = { cooldown_ms = 200; threshold = 0; max_age_ms = 0; };");
	die(&f, 1, TRANSIENT);
	reject_again(&f, 1);	/* cycle 1 */
	reject_again(&f, 1);	/* cycle 2: enough */
	ck_assert(h_worker_wait(&f.rig.w, "redrive_stopped", 1, WAIT_MS));
	all = records(&f);
	ck_assert_int_eq(cJSON_GetArraySize(all), 3);
	last = cJSON_GetArrayItem(all, 2);
	ck_assert_str_eq(h_jstr(last, "status"), "open");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(last,
	    "attempts")), 0);
	ck_assert_ptr_nonnull(strstr(h_jstr(last, "redrive_note"),
	    "gave up after 2 dead cycles"));
	/* the lineage shows every cycle: the first two were replayed */
	lin = cJSON_GetObjectItem(last, "lineage");
	ck_assert_int_eq(cJSON_GetArraySize(lin), 3);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(lin, 0), "status"), "replayed");
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(lin, 1), "status"), "replayed");
	ck_assert_int_eq(h_jnum(cJSON_GetArrayItem(lin, 2), "replay_count"), 2);
	cJSON_Delete(all);
	/* nothing more goes out, and the digest says so */
	ck_assert_int_eq(h_count(f.rig.q[0]), 0);
	wait_digest_with(&f, "gave up after 2 dead cycles");
	ck_assert_int_eq(h_digests_with(&f.rig.w, "Automatic redrive", NULL,
	    NULL), 1);
	ck_assert_int_eq(h_count(f.rig.q[0]), 0);
	ev = ctl(&f, 0, (const char *[]){ "stats", NULL });
	n = (int)h_jnum(cJSON_GetObjectItem(ev, "redrive"), "left_for_humans");
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h_jnum(cJSON_GetObjectItem(ev, "decisions"),
	    "max_cycles_per_message"), 2);
	cJSON_Delete(ev);
	h_rig_stop(&f.rig);
}
END_TEST

START_TEST(the_circuit_trips_and_stays_open_until_resumed)
{
	struct fixture f;
	cJSON *st, *q, **ev;
	amqp_message_t m;
	char *out, *err;
	int ticks, n;

	start(&f, "redrive = { queues = [ \"%1$s\" ]; min_age_ms = 0; "
	    "interval_ms = 200; watch_ms = 60000; max_cycles = 5; "
	    "trip_ratio = 0.5; };\n"
	    "alert = { cooldown_ms = 200; threshold = 0; max_age_ms = 0; };");
	die(&f, 2, TRANSIENT);
	ck_assert(h_worker_wait(&f.rig.w, "redrive_tick", 1, WAIT_MS));
	reject_again(&f, 2);	/* both come back: 2 of 2 > 0.5 */
	ck_assert(h_worker_wait(&f.rig.w, "redrive_circuit_open", 1, WAIT_MS));
	ev = h_worker_events(&f.rig.w, "redrive_circuit_open", &n);
	ck_assert_int_eq(h_jnum(ev[0], "redriven"), 2);
	ck_assert_int_eq(h_jnum(ev[0], "returned"), 2);
	h_events_free(ev, n);
	wait_digest_with(&f, "redrive PAUSED");
	st = ctl(&f, 0, (const char *[]){ "redrive", "status", NULL });
	q = cJSON_GetArrayItem(st, 0);
	ck_assert_str_eq(h_jstr(q, "queue"), f.rig.q[0]);
	ck_assert_str_eq(h_jstr(q, "circuit"), "open");
	ck_assert_int_eq(h_jnum(q, "returned"), 2);
	cJSON_Delete(st);
	/* ten ticks later still nothing: the two open cases wait */
	ticks = h_worker_count(&f.rig.w, "redrive_tick");
	ck_assert(!h_get(f.rig.c, f.rig.q[0], &m, 2000));
	ck_assert_int_eq(h_worker_count(&f.rig.w, "redrive_tick"), ticks);
	/* resuming needs a reason; a closed circuit cannot be resumed */
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, NULL, (const char *[]){
	    "redrive", "resume", f.rig.q[0], NULL }), 2);
	/* a typo is told apart from a circuit that is closed */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.rig.cfg, "redrive", "resume", "no_such_queue", "--reason", "x",
	    NULL }, NULL, NULL, &err), 1);
	ck_assert_str_eq(err, "dlqctl: the redrive circuit of no_such_queue is "
	    "not open (nor is it one of redrive.queues: dlqctl redrive status "
	    "lists them)\n");
	free(err);
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, NULL, (const char *[]){
	    "redrive", "resume", f.rig.q[0], "--reason", "provider fixed",
	    NULL }), 0);
	ck_assert(h_worker_wait(&f.rig.w, "redrive_resumed", 1, WAIT_MS));
	/* once more: it is closed now, and nothing claims it was resumed */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.rig.cfg, "redrive", "resume", f.rig.q[0], "--reason", "again",
	    NULL }, NULL, &out, &err), 1);
	ck_assert_str_eq(out, "");
	ck_assert_str_eq(strstr(err, "is not open"), "is not open\n");
	free(out);
	free(err);
	ck_assert(h_worker_wait(&f.rig.w, "redrive_tick", ticks + 1, WAIT_MS));
	ck_assert(h_get(f.rig.c, f.rig.q[0], &m, WAIT_MS));
	amqp_destroy_message(&m);
	ck_assert(h_get(f.rig.c, f.rig.q[0], &m, WAIT_MS));
	amqp_destroy_message(&m);
	st = ctl(&f, 0, (const char *[]){ "redrive", "status", NULL });
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(st, 0), "circuit"), "closed");
	ck_assert_int_eq(h_jnum(cJSON_GetArrayItem(st, 0), "published"), 4);
	cJSON_Delete(st);
	h_rig_stop(&f.rig);
}
END_TEST

/* dlqctl --json replay of the first queue's dead letters, unthrottled,
 * with a canary of `k` watched for `watch`; its exit status, its answer
 * in *j. */
static int
canary_replay(struct fixture *f, const char *k, const char *watch, cJSON **j)
{
	return h_dlqctl(f->rig.cfg, NULL, j, (const char *[]){ "replay",
	    "--queue", f->rig.q[0], "--canary", k, "--watch", watch, "--rate",
	    "0", "--execute", "--reason", "provider back", NULL });
}

START_TEST(a_canary_that_dies_again_stops_the_replay)
{
	struct fixture f;
	cJSON *j, *k, *all, *r;
	char *out, *err;
	pid_t child;
	int rc, published, touched = 0;

	h_set_heartbeat(1);	/* see the second replay */
	start(&f, "alert = { threshold = 0; max_age_ms = 0; };");
	die(&f, 6, TRANSIENT);
	/* a canary needs its watch, and stays small */
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, NULL, (const char *[]){
	    "replay", "--queue", f.rig.q[0], "--canary", "2", NULL }), 2);
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, NULL, (const char *[]){
	    "replay", "--queue", f.rig.q[0], "--canary", "5000", "--watch",
	    "1s", NULL }), 2);
	/* the dry run says how the canary would go */
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-c",
	    f.rig.cfg, "replay", "--queue", f.rig.q[0], "--canary", "2",
	    "--watch", "20s", NULL }, NULL, &out), 0);
	ck_assert_msg(strstr(out, "\ncanary: the first 2 go, watched for 20s; "
	    "the other 4 only if none of them comes back to a DLQ "
	    "meanwhile\n") != NULL, "%s", out);
	/* ... and that, with no consumer on the queue, it would not go: a
	 * canary waiting there unconsumed never comes back */
	ck_assert_msg(strstr(out, "\ncanary: no consumer on queue '") &&
	    strstr(out, "': a canary there waits unconsumed and proves "
	    "nothing; executed now, nothing would be sent\n"), "%s", out);
	free(out);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.rig.cfg, "replay", "--queue", f.rig.q[0], "--canary", "2",
	    "--watch", "20s", "--execute", "--reason", "provider back", NULL },
	    NULL, &out, &err), 1);
	ck_assert_msg(strstr(err, "nothing was sent (start its consumer, or "
	    "replay without --canary)"), "%s", err);
	free(out);
	free(err);
	ck_assert_int_eq(h_count(f.rig.q[0]), 0);

	/* the consumer still fails them */
	child = h_consumer(f.rig.q[0], 2, true, WAIT_MS);
	rc = canary_replay(&f, "2", "20s", &j);
	ck_assert_int_eq(h_consumer_done(child), 2);
	ck_assert_int_eq(rc, 3);
	ck_assert_int_eq(h_jnum(j, "published"), 2);
	k = cJSON_GetObjectItem(j, "canary");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(k, "stopped")));
	ck_assert_int_eq(h_jnum(k, "sent"), 2);
	ck_assert_int_eq(h_jnum(k, "untouched"), 4);
	ck_assert_int_ge(cJSON_GetArraySize(cJSON_GetObjectItem(k, "returned")),
	    1);
	cJSON_Delete(j);
	/* the rest was not touched: open, no attempt; nothing else sent */
	ck_assert_int_eq(h_count(f.rig.q[0]), 0);
	all = records(&f);
	cJSON_ArrayForEach(r, all)
		if (cJSON_GetArraySize(cJSON_GetObjectItem(r, "attempts")) > 0)
			touched++;
	ck_assert_int_eq(touched, 2);
	cJSON_Delete(all);

	/* with a consumer that works, a canary that stays away lets the
	 * rest go (the two that died again are new cases). The watch outlasts
	 * the heartbeats (1 s here): the broker closes the idle publisher
	 * meanwhile, and that must not cost a message */
	child = h_consumer(f.rig.q[0], 6, false, 10000);
	rc = canary_replay(&f, "1", "8s", &j);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(h_jnum(j, "unknown"), 0);
	ck_assert(!cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j,
	    "canary"), "stopped")));
	ck_assert_int_ge(published = (int)h_jnum(j, "published"), 4);
	cJSON_Delete(j);
	ck_assert_int_eq(h_consumer_done(child), published);

	/* a consumer gone before the watch ends leaves the canary unproven:
	 * the rest stays (the canary itself it took) */
	die(&f, 3, TRANSIENT);
	/* all archived: the 6, the 2 that died again and these 3 */
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 11, WAIT_MS));
	child = h_consumer(f.rig.q[0], 1, false, WAIT_MS);
	rc = canary_replay(&f, "1", "3s", &j);
	ck_assert_int_eq(h_consumer_done(child), 1);
	ck_assert_int_eq(rc, 3);
	k = cJSON_GetObjectItem(j, "canary");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(k, "stopped")));
	ck_assert_msg(strstr(h_jstr(k, "inconclusive"), "no consumer on "
	    "queue '"), "%s", h_jstr(k, "inconclusive"));
	ck_assert_int_eq(h_jnum(k, "untouched"), 2);
	ck_assert_int_eq(h_jnum(j, "published"), 1);
	cJSON_Delete(j);
	ck_assert_int_eq(h_count(f.rig.q[0]), 0);
	h_rig_stop(&f.rig);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("redrive");
	TCase *tc = tcase_create("redrive");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
	    transient_dead_letters_are_redriven_once_and_end_resolved);
	tcase_add_test(tc, a_consumer_that_keeps_rejecting_is_left_to_a_human);
	tcase_add_test(tc, the_circuit_trips_and_stays_open_until_resumed);
	tcase_add_test(tc, a_canary_that_dies_again_stops_the_replay);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
