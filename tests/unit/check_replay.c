/* check_replay.c - the replay eligibility policy, rule by rule. */
#include <check.h>
#include <string.h>

#include "../check_main.h"
#include "replay.h"

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

static Suite *
suite(void)
{
	Suite *s = suite_create("replay");
	TCase *tc = tcase_create("policy");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, an_open_transient_case_is_eligible);
	tcase_add_test(tc, each_rule_refuses_with_its_reason);
	tcase_add_test(tc, evidence_must_exist_and_be_fresh_when_required);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
