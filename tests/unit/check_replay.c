/* check_replay.c - the replay eligibility policy, rule by rule, and the
 * requests that record a replay's outcomes. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "replay.h"
#include "replaysend.h"

static char *never_v[] = { "validation", "security", NULL };
static struct dlq_replay_policy p;
static struct dlq_replay_facts f;
static char why[256];

static void
setup(void)
{
	memset(&p, 0, sizeof(p));
	p.max_age_ms = 3600000;
	p.max_replays = 3;
	p.never.v = never_v;
	p.never.n = 2;
	p.has_never = true;
	memset(&f, 0, sizeof(f));
	f.status = "open";
	f.class = "transient";
	f.age_ms = 1000;
	f.evidence_age_ms = -1;
	why[0] = '\0';
}

static bool
ok(bool force)
{
	return dlq_replay_eligible(&p, &f, force, why, sizeof(why));
}

START_TEST(an_open_transient_case_is_eligible)
{
	ck_assert(ok(false));
	f.status = "assigned";
	ck_assert(ok(false));
}
END_TEST

START_TEST(each_rule_refuses_with_its_reason)
{
	f.status = "replayed";
	ck_assert(!ok(true));
	ck_assert_str_eq(why, "status is replayed");
	setup();
	f.status = "replaying";
	ck_assert(!ok(false));
	ck_assert_ptr_nonnull(strstr(why, "outcome is unknown"));
	ck_assert(ok(true));
	setup();
	f.age_ms = 7200000;
	ck_assert(!ok(false));
	ck_assert_str_eq(why, "older than replay.max_age (2h > 60m)");
	setup();
	f.replay_count = 3;
	ck_assert(!ok(false));
	ck_assert_str_eq(why, "already replayed 3 times (replay.max_replays 3)");
	setup();
	f.class = "security";
	ck_assert(!ok(false));
	ck_assert_ptr_nonnull(strstr(why, "class security is never replayed"));
	ck_assert(ok(true));
	setup();
	p.require_owner = 1;
	ck_assert(!ok(false));
	ck_assert_str_eq(why, "no owner (replay.require_owner)");
	f.owner = "payments";
	ck_assert(ok(false));
}
END_TEST

/* An OTP sent 2026-12-04 10:00:00 UTC that died at 10:30: its age counts
 * from 10:00 in whichever unit its client wrote the timestamp. */
START_TEST(a_message_is_as_old_as_its_timestamp_in_any_unit)
{
	const uint64_t sent_s = 1796378400;	/* 2026-12-04T10:00:00Z */
	const int64_t sent_ms = 1796378400000LL, died_ms = sent_ms + 1800000;

	ck_assert_int_eq(dlq_replay_born_ms(sent_s, died_ms), sent_ms);
	ck_assert_int_eq(dlq_replay_born_ms(sent_s * 1000 + 250, died_ms),
	    sent_ms + 250);
	ck_assert_int_eq(dlq_replay_born_ms(sent_s * 1000000 + 250999,
	    died_ms), sent_ms + 250);
	ck_assert_int_eq(dlq_replay_born_ms(sent_s * 1000000000 + 250999999,
	    died_ms), sent_ms + 250);
	/* none, or after it died (a client's clock ahead): when it died */
	ck_assert_int_eq(dlq_replay_born_ms(0, died_ms), died_ms);
	ck_assert_int_eq(dlq_replay_born_ms(sent_s + 3600, died_ms), died_ms);
	ck_assert_int_eq(dlq_replay_born_ms(UINT64_MAX, died_ms), died_ms);
}
END_TEST

START_TEST(evidence_must_exist_and_be_fresh_when_required)
{
	ck_assert(ok(false));		/* not required */
	p.evidence_max_age_ms = 600000;
	ck_assert(!ok(false));
	ck_assert_ptr_nonnull(strstr(why, "no evidence"));
	f.evidence_age_ms = 0;		/* given with the replay */
	ck_assert(ok(false));
	f.evidence_age_ms = 900000;	/* checked 15 minutes ago */
	ck_assert(!ok(false));
	ck_assert_ptr_nonnull(strstr(why, "evidence is 15m old"));
	/* --force lifts the class rule only, never the evidence rule */
	ck_assert(!ok(true));
}
END_TEST

/* A replay_finish of `n` results (attempts 1..n, ids 101..), each with a
 * broker error `detail` of `len` control bytes (each printed as \u0001). */
static cJSON *
finish_of(int n, size_t len)
{
	cJSON *fin = cJSON_CreateObject(), *claim, *ids, *res;
	char *detail = malloc(len + 1);
	int i;

	memset(detail, '\001', len);
	detail[len] = '\0';
	cJSON_AddStringToObject(fin, "cmd", "replay_finish");
	ids = cJSON_AddArrayToObject(fin, "ids");
	res = cJSON_AddArrayToObject(fin, "results");
	for (i = 1; i <= n; i++) {
		claim = cJSON_CreateObject();
		cJSON_AddNumberToObject(claim, "attempt", i);
		dlq_replay_verdict(res, claim, DLQ_PUB_FAILED, detail);
		cJSON_AddItemToArray(ids, cJSON_CreateNumber(100 + i));
		cJSON_Delete(claim);
	}
	free(detail);
	return fin;
}

/* Each part prints within `max`, says what it is, and the parts hold
 * every result with its id, in order. Returns how many parts. */
static int
parts_hold_all(cJSON *parts, int n, size_t max)
{
	const cJSON *part, *r;
	char *text;
	int k = 0, i;

	cJSON_ArrayForEach(part, parts) {
		text = cJSON_PrintUnformatted(part);
		ck_assert_uint_le(strlen(text), max);
		cJSON_free(text);
		ck_assert_str_eq(cJSON_GetObjectItem(part, "cmd")->valuestring,
		    "replay_finish");
		ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(part,
		    "ids")), cJSON_GetArraySize(cJSON_GetObjectItem(part,
		    "results")));
		i = 0;
		cJSON_ArrayForEach(r, cJSON_GetObjectItem(part, "results")) {
			k++;
			ck_assert_int_eq((int)cJSON_GetObjectItem(r,
			    "attempt")->valuedouble, k);
			ck_assert_int_eq((int)cJSON_GetArrayItem(
			    cJSON_GetObjectItem(part, "ids"), i++)->valuedouble,
			    100 + k);
		}
	}
	ck_assert_int_eq(k, n);
	return cJSON_GetArraySize(parts);
}

/* 100 failures of 700 bytes that print six times as long: 420 KB, more
 * than the worker takes in one request (64 KiB). */
START_TEST(a_finish_past_the_request_limit_goes_in_parts)
{
	cJSON *fin = finish_of(100, 700), *parts;

	parts = dlq_replay_finish_split(fin, 64 * 1024);
	ck_assert_int_ge(parts_hold_all(parts, 100, 64 * 1024), 7);
	cJSON_Delete(parts);
	cJSON_Delete(fin);
	/* a usual one stays one request */
	fin = finish_of(100, 40);
	parts = dlq_replay_finish_split(fin, 64 * 1024);
	ck_assert_int_eq(parts_hold_all(parts, 100, 64 * 1024), 1);
	cJSON_Delete(parts);
	cJSON_Delete(fin);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("replay");
	TCase *tc = tcase_create("policy");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, an_open_transient_case_is_eligible);
	tcase_add_test(tc, each_rule_refuses_with_its_reason);
	tcase_add_test(tc, a_message_is_as_old_as_its_timestamp_in_any_unit);
	tcase_add_test(tc, evidence_must_exist_and_be_fresh_when_required);
	suite_add_tcase(s, tc);
	tc = tcase_create("finish");
	tcase_add_test(tc, a_finish_past_the_request_limit_goes_in_parts);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
