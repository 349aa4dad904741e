/* check_classify.c - the default rules on real-looking error texts, and
 * configured rules taking precedence. */
#include <check.h>
#include <string.h>

#include "../check_main.h"
#include "classify.h"

static struct dlq_config cfg;
static struct dlq_classifier *k;

static void
setup(void)
{
	memset(&cfg, 0, sizeof(cfg));
	ck_assert_ptr_nonnull(k = dlq_classify_new(&cfg, NULL));
}

static void
teardown(void)
{
	dlq_classify_free(k);
}

static const char *
class_of(const char *reason, const char *error)
{
	struct dlq_classification c;

	dlq_classify(k, "message_send", reason, error, &c);
	ck_assert_ptr_nonnull(c.hint);
	return c.class;
}

START_TEST(defaults_cover_the_seed_failures)
{
	static const struct { const char *reason, *error, *class; } cases[] = {
		{ "rejected", "upstream timeout after 30000ms", "transient" },
		{ "rejected", "connect ETIMEDOUT 10.0.0.7:443", "transient" },
		{ "rejected", "read ECONNRESET", "transient" },
		{ "rejected", "HTTP 503 Service Unavailable", "transient" },
		{ "rejected", "circuit breaker open for provider smsc", "transient" },
		{ "rejected", "HTTP 429 Too Many Requests", "rate_limited" },
		{ "rejected", "slack: invalid_auth", "security" },
		{ "rejected", "token_revoked", "security" },
		{ "rejected", "HTTP 401 Unauthorized", "security" },
		{ "rejected", "webhook signature mismatch", "security" },
		{ "rejected", "auth failed: Authorization: Bearer ***",
		  "security" },
		{ "rejected", "SMTP 535 Authentication failed", "security" },
		{ "rejected", "invalid API key", "security" },
		{ "rejected", "provider: Invalid credentials", "security" },
		{ "rejected", "access token is expired", "security" },
		{ "rejected", "api_key revoked by the provider", "security" },
		{ "rejected", "oauth: invalid_grant", "security" },
		/* a parser's token is the message's fault */
		{ "rejected", "invalid token in field 'to'", "validation" },
		{ "rejected", "schema validation failed: /to is required", "validation" },
		{ "rejected", "invalid phone number", "validation" },
		{ "rejected", "missing field 'recipient'", "validation" },
		{ "rejected", "Request failed with status code 422",
		  "validation" },
		{ "rejected", "422 Unprocessable Entity", "validation" },
		{ "rejected", "HTTP 413 Payload Too Large", "validation" },
		{ "rejected", "template otp_v2 not found", "configuration" },
		{ "rejected", "no route for sender id ACME", "configuration" },
		{ "rejected", "unknown provider code 7781", "contract" },
		{ "rejected", "incompatible event version 3", "contract" },
		{ "expired", "whatever happened", "expired" },
		{ "maxlen", "", "transient" },
		{ "delivery_limit", "", "unknown" },
		{ "delivery_limit", "HTTP 503 from smsc", "transient" },
		{ "rejected", "something odd", "unknown" },
		{ "rejected", "", "unknown" },
		{ "rejected", "order 4290001 failed", "unknown" },
		/* a status code is a word of its own, not the digits of a hex
		 * id or of "x509" */
		{ "rejected", "request 5e429bc1 failed", "unknown" },
		{ "rejected", "job 8a400b: no answer", "unknown" },
		{ "rejected", "status=429", "rate_limited" },
		{ "rejected", "provider: ERR_429", "rate_limited" },
		{ "rejected", "429", "rate_limited" },
		{ "rejected", "HTTP/1.1 503", "transient" },
		{ "rejected", "x509: certificate has expired or is not yet valid",
		  "security" },
		{ "rejected", "tls: failed to verify certificate: x509: "
		  "certificate signed by unknown authority", "security" },
		/* gRPC's and Go's words for the same failures */
		{ "rejected", "rpc error: code = DeadlineExceeded desc = context "
		  "deadline exceeded", "transient" },
		{ "rejected", "rpc error: code = ResourceExhausted desc = quota",
		  "rate_limited" },
		{ "rejected", "rpc error: code = PermissionDenied desc = no",
		  "security" },
		{ "rejected", "rpc error: code = Unauthenticated", "security" },
		{ "rejected", "write: broken pipe", "transient" },
		{ "rejected", "socket hang up", "transient" },
		{ "rejected", "pq: deadlock detected", "transient" },
		{ "rejected", "database is locked", "transient" },
		{ "rejected", "json: cannot unmarshal string into Go struct "
		  "field Msg.count of type int", "validation" },
		{ "rejected", "unexpected end of JSON input", "validation" },
		/* a crash is the consumer's bug, not an invalid message */
		{ "rejected", "panic: runtime error: invalid memory address or "
		  "nil pointer dereference", "unknown" },
		{ "rejected", "java.lang.NullPointerException: Cannot invoke "
		  "\"String.length()\"", "unknown" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(strcmp(class_of(cases[i].reason, cases[i].error),
		    cases[i].class) == 0, "%s: got %s, want %s", cases[i].error,
		    class_of(cases[i].reason, cases[i].error), cases[i].class);
}
END_TEST

/* Deaths the broker causes with no error text to go by: the hint says
 * what happened instead of the generic one. */
START_TEST(broker_reasons_get_their_own_hint)
{
	struct dlq_classification c;

	dlq_classify(k, "message_send", "delivery_limit", "", &c);
	ck_assert_str_eq(c.class, "unknown");
	ck_assert_ptr_nonnull(strstr(c.hint, "quorum queue's delivery limit"));
	dlq_classify(k, "message_send", "maxlen", "", &c);
	ck_assert_str_eq(c.class, "transient");
	ck_assert_ptr_nonnull(strstr(c.hint, "The queue was full"));
	dlq_classify(k, "message_send", "rejected", "", &c);
	ck_assert_ptr_null(strstr(c.hint, "delivery limit"));
}
END_TEST

/* A consumer's crash on a message points at the consumer: the hint says
 * to find its stack trace; not "fix the producer", as for validation. */
START_TEST(a_crash_points_at_the_consumer)
{
	static const char *const crashes[] = {
		"panic: runtime error: invalid memory address or nil pointer "
		    "dereference",
		"java.lang.NullPointerException at Sender.send(Sender.java:42)",
		"Traceback (most recent call last): File \"worker.py\", line 9",
		"Segmentation fault (core dumped)",
		"panic: runtime error: index out of range [3] with length 3",
	};
	struct dlq_classification c;
	size_t i;

	for (i = 0; i < sizeof(crashes) / sizeof(crashes[0]); i++) {
		dlq_classify(k, "message_send", "rejected", crashes[i], &c);
		ck_assert_str_eq(c.class, "unknown");
		ck_assert_msg(strstr(c.hint, "The consumer crashed") != NULL,
		    "%s: %s", crashes[i], c.hint);
	}
}
END_TEST

/* The channels of the seeds' systems (Slack, e-mail, SMS, Telegram,
 * WhatsApp) in their own words: Slack's underscored error codes, a chat
 * or recipient that is gone, a mail server's reply codes (4xx later, 5xx
 * for good; a hard bounce must not be redriven as "unavailable"),
 * SMPP's status names, a message the consumer found too late, a name
 * that does not resolve. Each with the hint that says what to do; a
 * port or a version number is not a reply code. */
START_TEST(providers_in_their_own_words)
{
	static const struct { const char *error, *class, *hint; } cases[] = {
		{ "slack: channel_not_found", "configuration",
		  "The destination is gone" },
		{ "slack api error: not_in_channel", "configuration",
		  "The destination is gone" },
		{ "slack: is_archived", "configuration",
		  "The destination is gone" },
		{ "Bad Request: chat not found", "configuration",
		  "The destination is gone" },
		{ "Forbidden: bot was blocked by the user", "configuration",
		  "The destination is gone" },
		{ "twilio 21610 Attempt to send to unsubscribed recipient",
		  "configuration", "The destination is gone" },
		{ "Forbidden: bot can't initiate conversation with a user",
		  "configuration", "The destination is gone" },
		{ "Forbidden: bot is not a member of the channel chat",
		  "configuration", "The destination is gone" },
		{ "Bad Request: group chat was upgraded to a supergroup chat",
		  "configuration", "The destination is gone" },
		{ "Bad Request: not enough rights to send text messages to "
		  "the chat", "configuration", "The destination is gone" },
		{ "slack webhook: no_service", "configuration",
		  "The destination is gone" },
		{ "slack: team_disabled", "configuration",
		  "The destination is gone" },
		{ "slack: token_expired", "security", "Credentials" },
		{ "slack: action_prohibited", "security", "Credentials" },
		{ "slack: fatal_error", "transient", "A dependency" },
		{ "slack: too_many_attachments", "validation",
		  "The message itself" },
		{ "Maximum credits exceeded", "rate_limited", "throttled" },
		{ "Domain sandbox1.example.org is not allowed to send",
		  "configuration", "A template, route or setting" },
		{ "slack: not_authed", "security", "Credentials" },
		{ "slack: missing_scope", "security", "Credentials" },
		{ "slack: account_inactive", "security", "Credentials" },
		{ "slack: ekm_access_denied", "security", "Credentials" },
		{ "resend: missing_api_key", "security", "Credentials" },
		{ "(#190) Access token has expired", "security",
		  "Credentials" },
		{ "slack: msg_too_long", "validation", "The message itself" },
		{ "slack: no_text", "validation", "The message itself" },
		{ "slack: internal_error", "transient", "A dependency" },
		{ "resend: internal_server_error", "transient",
		  "A dependency" },
		{ "resend: daily_quota_exceeded", "rate_limited",
		  "throttled" },
		{ "(#132001) Template name does not exist in the translation",
		  "configuration", "A template, route or setting" },
		{ "The example.com domain is not verified", "configuration",
		  "A template, route or setting" },
		/* mail: deferred, refused by policy, bounced */
		{ "451 4.7.1 Greylisted, please try again in 300 seconds",
		  "transient", "deferred" },
		{ "450-4.2.1 The user you are trying to contact is receiving "
		  "mail at a rate that prevents additional messages",
		  "transient", "deferred" },
		{ "SMTP error 451 local error in processing", "transient",
		  "deferred" },
		{ "454 4.7.0 Temporary authentication failure", "transient",
		  "deferred" },
		{ "554 5.7.1 Message rejected as spam", "security",
		  "by policy" },
		{ "550-5.7.26 Unauthenticated email from example.com is not "
		  "accepted due to domain's DMARC policy", "security",
		  "by policy" },
		{ "535 5.7.8 Authentication credentials invalid", "security",
		  "by policy" },
		{ "SMTP 550 5.1.1 mailbox unavailable", "validation",
		  "hard bounce" },
		{ "smtp; 550 5.1.1 <x@y.example>: Recipient address "
		  "rejected: User unknown in virtual mailbox table",
		  "validation", "hard bounce" },
		{ "SMTP 550 Requested action not taken: mailbox unavailable",
		  "validation", "hard bounce" },
		{ "552 5.2.2 Mailbox full", "validation", "hard bounce" },
		{ "no such user here", "validation", "hard bounce" },
		/* without a reply code, "unavailable" stays temporary */
		{ "mailbox unavailable", "transient", "A dependency" },
		/* SMS: SMPP's and the providers' words */
		{ "smpp bind failed: ESME_RINVPASWD", "security",
		  "Credentials" },
		{ "smpp: ESME_RMSGQFUL", "transient", "A dependency" },
		{ "smsc connection lost", "transient", "A dependency" },
		{ "21614 'To' number is not a valid mobile number",
		  "validation", "The message itself" },
		{ "sms body exceeds 1600 characters", "validation",
		  "The message itself" },
		{ "21408 Permission to send an SMS has not been enabled for "
		  "the region", "configuration",
		  "A template, route or setting" },
		/* too late, in the consumer's words: never replayed by
		 * default, as the broker's "expired" */
		{ "otp expired before delivery", "expired", "outlived" },
		{ "verification code has expired", "expired", "outlived" },
		{ "DLR stat:EXPIRED validity period expired", "expired",
		  "outlived" },
		{ "access token has expired", "security", "Credentials" },
		{ "token is not valid", "security", "Credentials" },
		/* WhatsApp (Meta's Graph API) and Twilio, in words and in
		 * codes alone */
		{ "(#131047) Re-engagement message", "expired",
		  "24-hour window" },
		{ "{\"code\":131047,\"title\":\"Message failed\"}",
		  "expired", "24-hour window" },
		{ "Twilio error 63016 Failed to send freeform message because "
		  "you are outside the allowed window", "expired",
		  "24-hour window" },
		{ "(#131026) Message Undeliverable.", "configuration",
		  "The destination is gone" },
		{ "(#131050) Unable to deliver the marketing message because "
		  "the user has stopped marketing messages", "configuration",
		  "The destination is gone" },
		{ "code=30006", "configuration", "The destination is gone" },
		{ "(#368) Temporarily blocked for policies violations",
		  "security", "by policy or locked" },
		{ "(#131031) Account has been locked", "security",
		  "by policy or locked" },
		{ "twilio 30007 Message filtered", "security",
		  "by policy or locked" },
		{ "(#200) Permissions error", "security", "Credentials" },
		{ "(#131049) This message was not delivered to maintain "
		  "healthy ecosystem engagement.", "rate_limited",
		  "throttled" },
		{ "(#4) Application request limit reached", "rate_limited",
		  "throttled" },
		{ "(#131000) Something went wrong", "transient",
		  "A dependency" },
		{ "twilio 30003 Unreachable destination handset", "transient",
		  "A dependency" },
		{ "(#131008) Required parameter is missing", "validation",
		  "The message itself" },
		{ "(#132000) Number of parameters does not match the expected "
		  "number of params", "validation", "The message itself" },
		{ "(#132007) Template Format Character Policy Violated",
		  "validation", "The message itself" },
		{ "(#131051) Unsupported message type", "validation",
		  "The message itself" },
		{ "(#132015) Template is Paused", "configuration",
		  "A template, route or setting" },
		{ "(#133010) Phone number not registered", "configuration",
		  "A template, route or setting" },
		{ "{\"code\":131056,\"title\":\"(Business Account, Consumer "
		  "Account) pair rate limit hit\"}", "rate_limited",
		  "throttled" },
		{ "(#130429)", "rate_limited", "throttled" },
		{ "(#131057) Account in maintenance mode", "transient",
		  "A dependency" },
		{ "code=131016", "transient", "A dependency" },
		{ "(#131053) Media upload error", "validation",
		  "The message itself" },
		{ "(#131037) WhatsApp provided number needs display name "
		  "approval before message can be sent.", "configuration",
		  "A template, route or setting" },
		{ "(#131045) Incorrect certificate", "configuration",
		  "A template, route or setting" },
		/* numbers that are not a provider's code */
		{ "order 131026 failed", "unknown", "Inspect" },
		{ "exit code 4", "unknown", "Inspect" },
		{ "retry count 63016", "unknown", "Inspect" },
		{ "code 1310260", "unknown", "Inspect" },
		/* networks and names */
		{ "getaddrinfo ENOTFOUND api.example.com", "configuration",
		  "did not resolve" },
		{ "getaddrinfo EAI_AGAIN api.example.com", "transient",
		  "A dependency" },
		{ "dial tcp 10.0.0.5:443: connect: no route to host",
		  "transient", "The network" },
		{ "no route for sender id ACME", "configuration",
		  "A template, route or setting" },
		/* numbers that are not reply codes */
		{ "connect to smtp.example.com:587: connection refused",
		  "transient", "A dependency" },
		{ "smtp:465 handshake failed", "unknown", "Inspect" },
		{ "order 550 failed", "unknown", "Inspect" },
		{ "node v5.7.1 exited", "unknown", "Inspect" },
		{ "amount 421 exceeds the 4.2.1 limit", "unknown", "Inspect" },
	};
	struct dlq_classification c;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dlq_classify(k, "message_send", "rejected", cases[i].error,
		    &c);
		ck_assert_msg(strcmp(c.class, cases[i].class) == 0 &&
		    strstr(c.hint, cases[i].hint) != NULL,
		    "%s: got %s (%s), want %s (%s)", cases[i].error, c.class,
		    c.hint, cases[i].class, cases[i].hint);
	}
}
END_TEST

/* The built-in rules see the text in lower case, whatever its case and
 * length; a configured rule in capitals matches any case too. */
START_TEST(case_and_length_do_not_matter)
{
	static struct dlq_rule_cfg rules[] = {
		{ "RISK HOLD", NULL, NULL, "manual", NULL, NULL },
	};
	char longer[3000];

	ck_assert_str_eq(class_of("rejected", "ECONNRESET"), "transient");
	ck_assert_str_eq(class_of("rejected", "EConnReset"), "transient");
	ck_assert_str_eq(class_of("rejected", "Slack: CHANNEL_NOT_FOUND"),
	    "configuration");
	memset(longer, 'x', sizeof(longer));
	strcpy(longer + sizeof(longer) - 20, " upstream TIMEOUT");
	ck_assert_str_eq(class_of("rejected", longer), "transient");
	longer[sizeof(longer) - 20] = '\0';
	ck_assert_str_eq(class_of("rejected", longer), "unknown");
	cfg.rules = rules;
	cfg.n_rules = 1;
	dlq_classify_free(k);
	ck_assert_ptr_nonnull(k = dlq_classify_new(&cfg, NULL));
	ck_assert_str_eq(class_of("rejected", "risk hold on card"), "manual");
	ck_assert_str_eq(class_of("rejected", "Risk Hold: timeout"),
	    "manual");
	cfg.rules = NULL;
	cfg.n_rules = 0;
}
END_TEST

/* The fingerprint a start compares with the one the archive noted: the
 * same rules give the same, a rule added or a hint changed another. */
START_TEST(the_rules_fingerprint_follows_the_rules)
{
	struct dlq_rule_cfg rules[1] = {
		{ "fraud", NULL, NULL, "manual", "Ask the risk team.", NULL },
	};
	struct dlq_classifier *again;
	uint64_t builtin = dlq_classify_rules_hash(k), one;

	ck_assert_ptr_nonnull(again = dlq_classify_new(&cfg, NULL));
	ck_assert(dlq_classify_rules_hash(again) == builtin);
	dlq_classify_free(again);
	cfg.rules = rules;
	cfg.n_rules = 1;
	ck_assert_ptr_nonnull(again = dlq_classify_new(&cfg, NULL));
	one = dlq_classify_rules_hash(again);
	ck_assert(one != builtin);
	dlq_classify_free(again);
	rules[0].hint = "Ask the fraud team.";
	ck_assert_ptr_nonnull(again = dlq_classify_new(&cfg, NULL));
	ck_assert(dlq_classify_rules_hash(again) != one);
	ck_assert(dlq_classify_rules_hash(again) != builtin);
	dlq_classify_free(again);
	cfg.rules = NULL;
	cfg.n_rules = 0;
}
END_TEST

START_TEST(configured_rules_come_first)
{
	struct dlq_rule_cfg rules[2] = {
		{ "fraud", NULL, NULL, "manual", "Ask the risk team.",
		    "https://wiki/fraud" },
		{ NULL, NULL, "^billing_", "manual", NULL, NULL },
	};
	struct dlq_classification c;

	cfg.rules = rules;
	cfg.n_rules = 2;
	dlq_classify_free(k);
	ck_assert_ptr_nonnull(k = dlq_classify_new(&cfg, NULL));
	dlq_classify(k, "message_send", "rejected", "timeout: FRAUD check", &c);
	ck_assert_str_eq(c.class, "manual");
	ck_assert_str_eq(c.hint, "Ask the risk team.");
	ck_assert_str_eq(c.link, "https://wiki/fraud");
	dlq_classify(k, "billing_usage", "rejected", "timeout", &c);
	ck_assert_str_eq(c.class, "manual");
	ck_assert_ptr_nonnull(c.hint);		/* the generic hint */
	dlq_classify(k, "message_send", "rejected", "timeout", &c);
	ck_assert_str_eq(c.class, "transient");
	cfg.rules = NULL;
	cfg.n_rules = 0;
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("classify");
	TCase *tc = tcase_create("rules");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, defaults_cover_the_seed_failures);
	tcase_add_test(tc, broker_reasons_get_their_own_hint);
	tcase_add_test(tc, a_crash_points_at_the_consumer);
	tcase_add_test(tc, providers_in_their_own_words);
	tcase_add_test(tc, case_and_length_do_not_matter);
	tcase_add_test(tc, the_rules_fingerprint_follows_the_rules);
	tcase_add_test(tc, configured_rules_come_first);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
