/* check_cli.c - what an operator sees from dlq-worker's and dlqctl's
 * command lines: --check-config answers, exit codes, no password in any
 * output, and `make run` on the embedded defaults. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../check_main.h"
#include "archive.h"
#include "cli.h"
#include "harness.h"
#include "signature.h"

#define WAIT_MS		20000

static int
check_config(const char *path, const char *const *env, char **out)
{
	if (path == NULL)
		return h_run((const char *[]){ h_bin("dlq-worker"),
		    "--check-config", NULL }, env, out);
	return h_run((const char *[]){ h_bin("dlq-worker"), "-c", path,
	    "--check-config", NULL }, env, out);
}

START_TEST(shipped_example_config_is_valid)
{
	char *out;

	ck_assert_int_eq(check_config("config/dlq-worker.conf", NULL, &out), 0);
	ck_assert_str_eq(out, "configuration OK\n");
	free(out);
	ck_assert_int_eq(check_config(NULL, NULL, &out), 0);
	ck_assert_str_eq(out, "configuration OK\n");
	free(out);
}
END_TEST

/* A role given to a name this host does not know is a warning: the
 * configuration is still valid (the user may come later). */
START_TEST(unknown_role_members_are_warned_about)
{
	const char *p = h_write_file("roles.conf", "control = { operators = "
	    "[ \"root\", \"alise\" ]; admins = [ \"@no_such_group_dlq\" ]; };\n");
	char *out;

	ck_assert_int_eq(check_config(p, NULL, &out), 0);
	ck_assert_str_eq(out, "warning: control.operators: no user 'alise' on "
	    "this host: the entry grants nothing\nwarning: control.admins: no "
	    "group 'no_such_group_dlq' on this host: the entry grants "
	    "nothing\nconfiguration OK\n");
	free(out);
}
END_TEST

/* A mask_keys list written for one more key replaces the defaults: the
 * check and every start say which keys now print in clear. A word of
 * the list masks the keys it is part of ("key": api_key). */
START_TEST(a_mask_list_that_leaves_out_defaults_is_warned_about)
{
	static const char *const q[] = { "mk", NULL };
	static const char list[] = "log = { mask_keys = [ \"password\", "
	    "\"key\", \"IBAN\", \"tax_id\" ]; };";
	static const char missing[] = "passwd, pwd, secret, token, "
	    "authorization, credential, cookie, session, phone, msisdn, email, "
	    "card, cvv, cvc, otp, passport, birth, pass, dob";
	const char *p = h_write_file("mask.conf", list);
	char *out, want[400];

	ck_assert_int_eq(check_config(p, NULL, &out), 0);
	snprintf(want, sizeof(want), "warning: mask_keys_narrowed: leaves out "
	    "%s: log.mask_keys replaces the default list: values under these "
	    "keys print in clear in the logs and digests; add them to the list "
	    "unless that is meant\nconfiguration OK\n", missing);
	ck_assert_str_eq(out, want);
	free(out);
	/* at start, in the log */
	p = h_setup("mk", q, list);
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlq-worker"), "-c", p,
	    "--assert-only", NULL }, NULL, &out), 0);
	snprintf(want, sizeof(want), "\"level\":\"warn\",\"event\":"
	    "\"mask_keys_narrowed\",\"missing\":\"%s\"", missing);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	free(out);
	/* the shipped list, and the defaults, leave out nothing */
	ck_assert_int_eq(check_config("config/dlq-worker.conf", NULL, &out), 0);
	ck_assert_str_eq(out, "configuration OK\n");
	free(out);
	p = h_setup("mk", q, NULL);
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlq-worker"), "-c", p,
	    "--assert-only", NULL }, NULL, &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"event\":\"topology_asserted\""));
	ck_assert_ptr_null(strstr(out, "mask_keys_narrowed"));
	free(out);
}
END_TEST

/* --check-config runs the checks each start runs and says the same:
 * a config file others can read that holds a webhook URL, and the
 * broker's password sent over plain http:// to another host. */
START_TEST(check_config_warns_as_a_start_does)
{
	static const char *const q[] = { "cw", NULL };
	const char *p;
	char *out, want[400];

	p = h_write_file("open.conf", "alert = { targets = ( { url = "
	    "\"https://hooks.example.invalid/services/T0/B0/SECRET\"; } ); };\n"
	    "rabbitmq = { management_url = \"http://mq.example.invalid:15672/\"; "
	    "};\n");
	ck_assert_int_eq(chmod(p, 0644), 0);
	ck_assert_int_eq(check_config(p, NULL, &out), 0);
	snprintf(want, sizeof(want), "warning: config_insecure: %s (0644): the "
	    "file holds a password or webhook URL: chmod 600", p);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	ck_assert_msg(strstr(out, "warning: management_plaintext: "
	    "mq.example.invalid: rabbitmq.management_url is plain http:// to "
	    "another host") != NULL, "%s", out);
	ck_assert_ptr_null(strstr(out, "SECRET"));
	ck_assert_ptr_nonnull(strstr(out, "\nconfiguration OK\n"));
	free(out);
	/* the same at a start (which then finds no such API: exit 1) */
	p = h_setup("cw", q, NULL);
	h_run((const char *[]){ h_bin("dlq-worker"), "-c", p, "--assert-only",
	    NULL }, (const char *[]){ "RABBITMQ_MANAGEMENT_URL=http://"
	    "mq.example.invalid:15672/", NULL }, &out);
	ck_assert_msg(strstr(out, "\"event\":\"management_plaintext\",\"host\":"
	    "\"mq.example.invalid\"") != NULL, "%s", out);
	free(out);
	/* the management API on this host is no warning */
	p = h_write_file("local.conf", "rabbitmq = { management_url = "
	    "\"http://127.0.0.1:15672/\"; };\n");
	ck_assert_int_eq(check_config(p, NULL, &out), 0);
	ck_assert_str_eq(out, "configuration OK\n");
	free(out);
}
END_TEST

/* Whether the file at `path` holds the bytes of `needle`. */
static bool
file_holds(const char *path, const char *needle)
{
	char *text;
	size_t n;
	bool found;
	FILE *f;

	ck_assert_ptr_nonnull(f = fopen(path, "rb"));
	ck_assert_ptr_nonnull(text = malloc(64 << 20));
	n = fread(text, 1, 64 << 20, f);
	fclose(f);
	ck_assert_uint_gt(n, 0);
	found = memmem(text, n, needle, strlen(needle)) != NULL;
	free(text);
	return found;
}

/* The fault-injection hooks the tests use (DLQ_FAULT_*) are compiled
 * into the tests' own binaries only: the ones users run, one directory
 * up, do not even hold the variables' names. */
START_TEST(the_binaries_users_run_have_no_fault_hooks)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/../dlq-worker", getenv("DLQ_BIN") ?
	    getenv("DLQ_BIN") : "build/test");
	ck_assert_msg(!file_holds(path, "DLQ_FAULT_"), "%s has hooks", path);
	snprintf(path, sizeof(path), "%s/../dlqctl", getenv("DLQ_BIN") ?
	    getenv("DLQ_BIN") : "build/test");
	ck_assert_msg(!file_holds(path, "DLQ_FAULT_"), "%s has hooks", path);
	ck_assert(file_holds(h_bin("dlq-worker"), "DLQ_FAULT_"));
	ck_assert(file_holds(h_bin("dlqctl"), "DLQ_FAULT_"));
}
END_TEST

START_TEST(missing_file_is_named)
{
	char *out;

	ck_assert_int_eq(check_config("/nonexistent/dlq.conf", NULL, &out), 1);
	ck_assert_str_eq(out,
	    "/nonexistent/dlq.conf: cannot open: No such file or directory\n");
	free(out);
}
END_TEST

START_TEST(syntax_error_names_the_line)
{
	const char *p = h_write_file("syntax.conf",
	    "rabbitmq = {\n  prefetch = 10;\n  heartbeat = = 3;\n};\n");
	char *out, want[300];

	ck_assert_int_eq(check_config(p, NULL, &out), 1);
	snprintf(want, sizeof(want), "%s:3: syntax error (a setting is "
	    "name = value; text in \"double quotes\", a group in { }, a list "
	    "in ( ))\n", p);
	ck_assert_str_eq(out, want);
	free(out);
}
END_TEST

START_TEST(bad_values_are_refused_with_file_line_and_value)
{
	const char *p = h_write_file("values.conf",
	    "rabbitmq = {\n  prefetch = 70000;\n};\nalert = {\n"
	    "  cooldown_ms = -1;\n};\nlog = { colour = true; };\n");
	char *out, want[300];

	ck_assert_int_eq(check_config(p, NULL, &out), 1);
	snprintf(want, sizeof(want), "%s:2: rabbitmq.prefetch: bad value "
	    "'70000': out of range 1..65535", p);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	snprintf(want, sizeof(want), "%s:5: alert.cooldown_ms: bad value "
	    "'-1': out of range", p);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	snprintf(want, sizeof(want), "%s:7: unknown setting 'log.colour'", p);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	free(out);
}
END_TEST

/* A replay policy or redrive for a queue the topology does not have is
 * a typo that would leave the policy unused (an expired OTP replayable):
 * refused with file, line and name. An unmonitored queue is the
 * topology's (its DLQ is read with replay --from-queue). */
START_TEST(a_queue_the_topology_lacks_is_refused_where_it_is_named)
{
	const char *p = h_write_file("queues.conf",
	    "replay = { queues = (\n"
	    "  { queue = \"message_send\"; max_age_ms = 600000; },\n"
	    "  { queue = \"notifcation_sms\"; max_age_ms = 600000; },\n"
	    "  { queue = \"message_received_trigger\"; max_replays = 1; }\n"
	    "); };\n"
	    "redrive = { queues = [ \"message_send\",\n  \"mesage_push\" ]; };\n");
	char *out, want[600];

	ck_assert_int_eq(check_config(p, NULL, &out), 1);
	snprintf(want, sizeof(want), "%s:3: replay.queues: bad value "
	    "'notifcation_sms': not a work queue of the topology (the "
	    "built-in line topology); did you mean 'notification_sms'?\n"
	    "%s:7: redrive.queues: bad value 'mesage_push': not a work queue "
	    "of the topology (the built-in line topology); did you mean "
	    "'message_push'?\n", p, p);
	ck_assert_str_eq(out, want);
	free(out);
}
END_TEST

START_TEST(env_errors_name_the_variable_never_the_password)
{
	char *out;

	ck_assert_int_eq(check_config(NULL, (const char *[]){
	    "DLQ_ALERT_COOLDOWN_MS=-5", NULL }, &out), 1);
	ck_assert_str_eq(out, "DLQ_ALERT_COOLDOWN_MS: alert.cooldown_ms: bad "
	    "value '-5': out of range 0..604800000\n");
	free(out);

	ck_assert_int_eq(check_config(NULL, (const char *[]){
	    "RABBITMQ_URL=http://admin:s3cr3t-pw@broker:5672/", NULL }, &out), 1);
	ck_assert_msg(strstr(out, "RABBITMQ_URL: rabbitmq.url: bad value "
	    "'http://admin:***@broker:5672/'") != NULL, "%s", out);
	ck_assert_ptr_null(strstr(out, "s3cr3t"));
	free(out);

	ck_assert_int_eq(check_config(NULL, (const char *[]){
	    "RABBITMQ_URL=amqp://admin:s3cr3t-pw@broker:99999/", NULL }, &out), 1);
	ck_assert_ptr_nonnull(strstr(out, "RABBITMQ_URL"));
	ck_assert_ptr_null(strstr(out, "s3cr3t"));
	free(out);
}
END_TEST

START_TEST(bad_topology_file_is_refused)
{
	const char *t = h_write_file("bad-topology.conf",
	    "queues = (\n  { name = \"a\"; },\n  { name = \"a\"; },\n"
	    "  { name = \"b\"; delivery_limit = 3; }\n);\n");
	char cfg[512], *out, want[400];
	const char *p;

	snprintf(cfg, sizeof(cfg), "topology = { file = \"%s\"; };\n", t);
	p = h_write_file("topo.conf", cfg);
	ck_assert_int_eq(check_config(p, NULL, &out), 1);
	snprintf(want, sizeof(want), "%s:3: queue 'a' is listed twice", t);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	snprintf(want, sizeof(want), "%s:4: queue 'b': delivery_limit needs "
	    "type = \"quorum\"", t);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	free(out);
}
END_TEST

/* A mistyped option of the worker is refused (exit 2) with the one most
 * likely meant, and the usage; so is one without its value. */
START_TEST(dlq_worker_names_the_option_meant)
{
	static const char *const cases[][2] = {
		{ "--assert-onyl", "dlq-worker: unknown option "
		    "'--assert-onyl'; did you mean '--assert-only'?\n" },
		{ "--config", "dlq-worker: --config needs a value\n" },
		/* a prefix is not the option: options are matched exactly */
		{ "--conf", "dlq-worker: unknown option '--conf'; did you "
		    "mean '--config'?\n" },
		{ "--check", "dlq-worker: unknown option '--check'; did you "
		    "mean '--check-config'?\n" },
		{ "--assert", "dlq-worker: unknown option '--assert'; did you "
		    "mean '--assert-only'?\n" },
		{ "--vers", "dlq-worker: unknown option '--vers'; did you "
		    "mean '--version'?\n" },
		{ "-c", "dlq-worker: -c needs a value\n" },
		{ "-x", "dlq-worker: unknown option '-x'\n" },
	};
	char *out, *err;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(h_run_split((const char *[]){
		    h_bin("dlq-worker"), cases[i][0], NULL }, NULL, &out, &err),
		    2);
		ck_assert_str_eq(out, "");
		ck_assert_msg(strncmp(err, cases[i][1], strlen(cases[i][1])) ==
		    0 && strncmp(err + strlen(cases[i][1]), "usage: dlq-worker ",
		    18) == 0, "%s: %s", cases[i][0], err);
		free(out);
		free(err);
	}
}
END_TEST

/* --version says what the worker writes into an archive: an operator
 * sees before an upgrade whether it migrates the archive or gives its
 * records their signatures again. */
START_TEST(dlq_worker_version_names_its_archive_schema)
{
	char *out, want[128];

	snprintf(want, sizeof(want), "dlq-worker %s (archive schema %d, "
	    "signature version %d)\n", DLQ_VERSION, DLQ_ARCHIVE_SCHEMA,
	    DLQ_SIGNATURE_VERSION);
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlq-worker"),
	    "--version", NULL }, NULL, &out), 0);
	ck_assert_str_eq(out, want);
	free(out);
	snprintf(want, sizeof(want), "dlqctl %s\n", DLQ_VERSION);
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-V",
	    NULL }, NULL, &out), 0);
	ck_assert_str_eq(out, want);
	free(out);
}
END_TEST

/* A typo in a command names the command most likely meant; in one of
 * two words, the group's commands too. */
START_TEST(dlqctl_names_what_a_mistyped_command_could_be)
{
	char *out, *err;

	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "topology", "shwo", NULL }, NULL, &out, &err), 2);
	ck_assert_str_eq(out, "");
	ck_assert_str_eq(err, "dlqctl: unknown topology command 'shwo'; did "
	    "you mean 'topology show'?\nusage: dlqctl topology show\n"
	    "usage: dlqctl topology assert\n");
	free(out);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "redrive", NULL }, NULL, NULL, &err), 2);
	ck_assert_str_eq(err, "dlqctl: redrive needs a command\n"
	    "usage: dlqctl redrive status\n"
	    "usage: dlqctl redrive resume QUEUE --reason TEXT\n");
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "lsit", NULL }, NULL, NULL, &err), 2);
	ck_assert_ptr_nonnull(strstr(err, "dlqctl: unknown command 'lsit'; "
	    "did you mean 'list'?\nusage: dlqctl [-c FILE]"));
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "show", "12abc", NULL }, NULL, NULL, &err), 2);
	ck_assert_str_eq(err, "dlqctl: '12abc' is not an archive id\n"
	    "usage: dlqctl show ID [--payload]\n");
	free(err);
	/* too large to reach the worker as given: refused here, not sent
	 * rounded to another record's id */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "drop", "9007199254740992", "--reason", "x", NULL }, NULL, NULL,
	    &err), 2);
	ck_assert_ptr_nonnull(strstr(err, "dlqctl: '9007199254740992' is not "
	    "an archive id\n"));
	free(err);
}
END_TEST

/* `dlqctl help COMMAND` of each command `dlqctl help` lists: its usage
 * line, a blank line, what it does and a line for each option it takes
 * (the words of its usage line that start with "--"). */
static void
every_command_says_what_it_does(void)
{
	const char *argv[5] = { NULL, "help", NULL, NULL, NULL };
	char *all, *out, *line, *save, *w, *wsave, *text, name[64], opt[48];
	int n = 0, words;

	argv[0] = h_bin("dlqctl");
	ck_assert_int_eq(h_run_split(argv, NULL, &all, NULL), 0);
	for (line = strtok_r(all, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "  dlqctl ", 9) != 0)
			continue;
		/* the command's name: its lowercase words before the first
		 * argument or option ("show", "redrive resume") */
		words = 0;
		name[0] = '\0';
		for (w = strtok_r(line + 9, " ", &wsave); w != NULL &&
		    w[0] != '-' && strspn(w, "abcdefghijklmnopqrstuvwxyz-") ==
		    strlen(w); w = strtok_r(NULL, " ", &wsave)) {
			ck_assert_int_lt(words, 2);
			argv[2 + words++] = w;
			snprintf(name + strlen(name), sizeof(name) -
			    strlen(name), "%s%s", words > 1 ? " " : "", w);
		}
		ck_assert_msg(words > 0, "no command in '%s'", line);
		argv[2 + words] = NULL;
		ck_assert_int_eq(h_run_split(argv, NULL, &out, NULL), 0);
		text = strstr(out, "\n\n");
		ck_assert_msg(text != NULL && strlen(text) > 40 &&
		    out[strlen(out) - 1] == '\n', "help %s says nothing: %s",
		    name, out);
		/* each option of its usage line is explained */
		for (; w != NULL; w = strtok_r(NULL, " ", &wsave)) {
			w += strspn(w, "[(|");
			if (strncmp(w, "--", 2) != 0)
				continue;
			snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(w,
			    "])|"), w);
			ck_assert_msg(strstr(text, opt) != NULL,
			    "help %s does not explain %s", name, opt);
		}
		free(out);
		n++;
	}
	ck_assert_int_ge(n, 15);
	free(all);
}

/* Help is asked for, not a mistake: stdout, exit 0, no config read (the
 * file named here does not exist). */
START_TEST(dlqctl_help_prints_the_usage_asked_for)
{
	static const char *const cases[][4] = {
		{ "help", "replay", NULL },
		{ "list", "--help", NULL },
		{ "topology", "show", "-h", NULL },
		{ "help", "topology", NULL },
		{ "help", NULL },
	};
	static const char *const want[] = {
		"usage: dlqctl replay (ID... | --queue Q ",
		"usage: dlqctl list [--queue Q] ",
		"usage: dlqctl topology show\n",
		"usage: dlqctl topology show\nusage: dlqctl topology assert\n",
		"usage: dlqctl [-c FILE] [--json] [--timeout DUR] COMMAND "
		    "[ARGS]\n"
		    "       dlqctl help [COMMAND]",
	};
	const char *argv[8];
	char *out, *err;
	size_t i, k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		argv[0] = h_bin("dlqctl");
		argv[1] = "-c";
		argv[2] = "/nonexistent/dlq-worker.conf";
		for (k = 0; cases[i][k] != NULL; k++)
			argv[k + 3] = cases[i][k];
		argv[k + 3] = NULL;
		ck_assert_int_eq(h_run_split(argv, NULL, &out, &err), 0);
		ck_assert_msg(strncmp(out, want[i], strlen(want[i])) == 0,
		    "%s %s: %s", cases[i][0], cases[i][1], out);
		ck_assert_str_eq(err, "");
		free(out);
		free(err);
	}
	every_command_says_what_it_does();
	argv[0] = h_bin("dlqctl");
	argv[1] = "help";
	argv[2] = "frob";
	argv[3] = NULL;
	ck_assert_int_eq(h_run_split(argv, NULL, NULL, &err), 2);
	ck_assert_ptr_nonnull(strstr(err, "dlqctl: unknown command 'frob'\n"));
	free(err);
}
END_TEST

/* The worker's file holds secrets and is kept from others: an operator
 * who names it is told what dlqctl needs of it instead. */
START_TEST(an_unreadable_config_says_dlqctl_needs_only_the_socket)
{
	const char *dlqctl = h_share_tmpdir();
	const char *cfg = h_write_file("secret.conf", "alert = { webhook_url "
	    "= \"https://chat.example/hook\"; };\n");
	char *err;

	ck_assert_int_eq(chmod(cfg, 0600), 0);
	ck_assert_int_eq(h_run_split((const char *[]){ "/usr/sbin/runuser",
	    "-u", "nobody", "--", dlqctl, "-c", cfg, "list", NULL }, NULL,
	    NULL, &err), 1);
	ck_assert_msg(strstr(err, ": cannot open: Permission denied\n"
	    "dlqctl: the worker's configuration is not readable for you; the "
	    "archive commands need only its socket: leave out -c and set "
	    "DLQ_CONTROL_SOCKET if it is not /run/dlq-monitor/control.sock\n")
	    != NULL, "%s", err);
	free(err);
	/* a file that is not there is no matter of access */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    "/nonexistent/dlq.conf", "list", NULL }, NULL, NULL, &err), 1);
	ck_assert_str_eq(err, "/nonexistent/dlq.conf: cannot open: No such "
	    "file or directory\n");
	free(err);
}
END_TEST

/* Each line a command needs and did not get is named before the usage. */
START_TEST(dlqctl_says_what_a_command_line_is_missing)
{
	static const char *const cases[][8] = {
		{ "drop", "7", NULL },
		{ "dlqctl: drop needs --reason\n" },
		{ "drop", "--reason", "duplicate", NULL },
		{ "dlqctl: drop needs one of: archive ids, --queue Q or "
		    "--signature SIG\n" },
		{ "drop", "--class", "expired", "--reason", "too late", NULL },
		{ "dlqctl: --class and --since narrow a --queue or --signature "
		    "selection\n" },
		{ "assign", "7", "--owner", "payments", NULL },
		{ "dlqctl: assign needs --decision\n" },
		{ "reopen", "7", NULL },
		{ "dlqctl: reopen needs --reason\n" },
		{ "reopen", "--since", "1h", "--reason", "wrong one", NULL },
		{ "dlqctl: --class and --since narrow a --queue or --signature "
		    "selection\n" },
		{ "redrive", "resume", "orders", NULL },
		{ "dlqctl: redrive resume needs --reason\n" },
		{ "purge", NULL },
		{ "dlqctl: purge needs --older-than\n" },
		{ "replay", "7", "--queue", "orders", NULL },
		{ "dlqctl: replay needs one of: archive ids, --queue Q, "
		    "--signature SIG or --from-queue Q\n" },
		{ "replay", "--from-queue", "orders.dlq", "--queue", "orders",
		    NULL },
		{ "dlqctl: replay needs one of: archive ids, --queue Q, "
		    "--signature SIG or --from-queue Q\n" },
		{ "replay", "7", "--class", "transient", NULL },
		{ "dlqctl: --class and --since narrow a --queue or --signature "
		    "selection\n" },
		{ "drop", "7", "--signature", "3dadb6d55f21", "--reason", "x",
		    NULL },
		{ "dlqctl: drop needs one of: archive ids, --queue Q or "
		    "--signature SIG\n" },
		{ "replay", "--from-queue", "orders.dlq", "--signature",
		    "3dadb6d55f21", NULL },
		{ "dlqctl: replay needs one of: archive ids, --queue Q, "
		    "--signature SIG or --from-queue Q\n" },
		{ "replay", "7", "--since", "1h", NULL },
		{ "dlqctl: --class and --since narrow a --queue or --signature "
		    "selection\n" },
		/* a blank text is no reason; an option given twice would
		 * leave which one counts to chance */
		{ "drop", "7", "--reason", " \t", NULL },
		{ "dlqctl: --reason: empty\n" },
		{ "replay", "7", "--execute", "--reason", "", NULL },
		{ "dlqctl: --reason: empty\n" },
		{ "assign", "7", "--owner", "a", "--owner", "b", "--decision", NULL },
		{ "dlqctl: --owner given twice\n" },
		/* ids named are all taken or none: more than the limit is a
		 * mistake to say, not a cut to make */
		{ "replay", "7", "8", "9", "--limit", "2", NULL },
		{ "dlqctl: 3 archive ids, more than the limit of 2 (--limit, "
		    "or replay.limit): give --limit 3 to replay them all\n" },
		/* what the worker answers at most, said before asking it */
		{ "list", "--limit", "20000", NULL },
		{ "dlqctl: --limit: expected 1..10000, not '20000'\n" },
		{ "drop", "--queue", "orders", "--since", "0s", "--reason",
		    "x", NULL },
		{ "dlqctl: --since: must be more than 0, not '0s'\n" },
		{ "audit", "--since", "1y", NULL },
		{ "dlqctl: --since: bad duration '1y' (a number and ms, s, m, "
		    "h, d or w: 90s, 15m, 2h, 7d)\n" },
		/* a status, class or signature the worker would not know,
		 * said without it (none runs here), case ignored */
		{ "list", "--status", "opne", NULL },
		{ "dlqctl: --status: unknown status 'opne' (open, assigned, "
		    "replaying, replayed, discarded); did you mean 'open'?\n" },
		{ "replay", "--queue", "orders", "--class", "Transiant", NULL },
		{ "dlqctl: --class: unknown class 'transiant' (transient, "
		    "rate_limited, validation, configuration, contract, "
		    "security, expired, manual, unknown); did you mean "
		    "'transient'?\n" },
		{ "list", "--class", "timeout", NULL },
		{ "dlqctl: --class: unknown class 'timeout' (transient, "
		    "rate_limited, validation, configuration, contract, "
		    "security, expired, manual, unknown)\n" },
		{ "drop", "--queue", "orders", "--signature", "3dadb6d55f2",
		    "--reason", "x", NULL },
		{ "dlqctl: --signature: not a signature: '3dadb6d55f2' (12 hex "
		    "digits, as dlqctl groups shows them)\n" },
		/* getopt's mistakes, said by dlqctl */
		{ "show", "-5", NULL },
		{ "dlqctl: show: unknown option '-5'\n" },
		{ "list", "--queue", NULL },
		{ "dlqctl: --queue needs a value\n" },
		{ "replay", "7", "--execute=yes", NULL },
		{ "dlqctl: --execute takes no value\n" },
		{ "replay", "7", "--re", "x", NULL },
		{ "dlqctl: replay: unknown option '--re'\n" },
		{ "replay", "7", "--exectue", NULL },
		{ "dlqctl: replay: unknown option '--exectue'; "
		    "did you mean '--execute'?\n" },
		/* an option's value is not an option, even when it looks
		 * like --help or --json; nor is a word after "--" */
		{ "assign", "7", "--owner", "-h", NULL },
		{ "dlqctl: assign needs --decision\n" },
		{ "assign", "7", "--owner", "--help", NULL },
		{ "dlqctl: assign needs --decision\n" },
		{ "assign", "7", "--reason", "--json", "--owner", "x", NULL },
		{ "dlqctl: assign does not take --reason\n" },
		{ "assign", "7", "--owner", "--json", NULL },
		{ "dlqctl: assign needs --decision\n" },
		{ "show", "--", "-h", NULL },
		{ "dlqctl: '-h' is not an archive id\n" },
		/* a word too many or too few is named */
		{ "show", NULL },
		{ "dlqctl: show needs an archive id\n" },
		{ "show", "7", "8", NULL },
		{ "dlqctl: show: unexpected argument '8'\n" },
		{ "list", "orders", NULL },
		{ "dlqctl: list: unexpected argument 'orders'\n" },
		{ "topology", "show", "orders", NULL },
		{ "dlqctl: topology show: unexpected argument 'orders'\n" },
		{ "stats", "--since", "1h", NULL },
		{ "dlqctl: stats: unknown option '--since' (stats takes "
		    "none)\n" },
		{ "redrive", "status", "-q", NULL },
		{ "dlqctl: redrive status: unknown option '-q' (redrive status "
		    "takes none)\n" },
		{ "redrive", "resume", "--reason", "fixed", NULL },
		{ "dlqctl: redrive resume needs a queue\n" },
		{ "redrive", "resume", "orders", "payments", "--reason", "x",
		    NULL },
		{ "dlqctl: redrive resume: unexpected argument 'payments'\n" },
		{ "inject", "--count", "3", NULL },
		{ "dlqctl: inject needs --queue\n" },
		/* dlqctl's own options, before the command */
		{ "--jsn", "list", NULL },
		{ "dlqctl: unknown option '--jsn'; did you mean "
		    "'--json'?\n" },
		{ "--timeout", NULL },
		{ "dlqctl: --timeout needs a value\n" },
		{ "--json=yes", "list", NULL },
		{ "dlqctl: --json takes no value\n" },
	};
	const char *argv[10];
	char *out, *err;
	size_t i, k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i += 2) {
		argv[0] = h_bin("dlqctl");
		for (k = 0; cases[i][k] != NULL; k++)
			argv[k + 1] = cases[i][k];
		argv[k + 1] = NULL;
		ck_assert_int_eq(h_run_split(argv, NULL, &out, &err), 2);
		ck_assert_str_eq(out, "");
		ck_assert_msg(strncmp(err, cases[i + 1][0],
		    strlen(cases[i + 1][0])) == 0, "%s: %s", cases[i][0], err);
		ck_assert_ptr_nonnull(strstr(err, "\nusage: dlqctl "));
		free(out);
		free(err);
	}
}
END_TEST

/* Every option of every command, and dlqctl's own, is taken by its whole
 * name only: the name less its last letter ("--execut", "--ye") is
 * refused with exit 2, nothing on stdout, and the option meant. The
 * commands and their options are read from `dlqctl help`, so a new one
 * is covered when it is added. */
START_TEST(dlqctl_takes_no_abbreviated_option)
{
	char *help, *line, *next, *tok, *save, *out, *err, want[160];
	char prefix[64], copy[1024];
	const char *argv[12];
	int words, n, tried = 0;

	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "help",
	    NULL }, NULL, &help), 0);
	for (line = help; line != NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strncmp(line, "  dlqctl ", 9) != 0)
			continue;
		snprintf(copy, sizeof(copy), "%s", line + 9);
		argv[0] = h_bin("dlqctl");
		words = 1;
		for (tok = strtok_r(copy, " ", &save); tok != NULL && words < 4 &&
		    strspn(tok, "abcdefghijklmnopqrstuvwxyz-") == strlen(tok) &&
		    tok[0] != '-'; tok = strtok_r(NULL, " ", &save))
			argv[words++] = tok;
		for (; tok != NULL; tok = strtok_r(NULL, " ", &save)) {
			tok += strspn(tok, "[(|");
			if (strncmp(tok, "--", 2) != 0)
				continue;
			n = (int)strcspn(tok, "])|");
			snprintf(prefix, sizeof(prefix), "%.*s", n - 1, tok);
			argv[words] = prefix;
			argv[words + 1] = NULL;
			ck_assert_int_eq(h_run_split(argv, NULL, &out, &err), 2);
			ck_assert_str_eq(out, "");
			snprintf(want, sizeof(want), "unknown option '%s'; did "
			    "you mean '%.*s'?\n", prefix, n, tok);
			ck_assert_msg(strstr(err, want) != NULL, "%s %s: %s",
			    argv[1], prefix, err);
			free(out);
			free(err);
			tried++;
		}
	}
	free(help);
	ck_assert_int_ge(tried, 40);
	/* and dlqctl's own, before the command */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "--tim", "1s", "list", NULL }, NULL, &out, &err), 2);
	ck_assert_ptr_nonnull(strstr(err, "dlqctl: unknown option '--tim'; did "
	    "you mean '--timeout'?\n"));
	free(out);
	free(err);
}
END_TEST

/* A worker that takes the connection and never answers (stuck, or busy
 * with a long purge) does not hang the operator's command line: dlqctl
 * gives up after --timeout (2 min by default) and says why. */
START_TEST(dlqctl_gives_up_on_a_worker_that_never_answers)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *env[2];
	char var[160], *out, *err;
	int64_t t0;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
	    h_tmp_path("stuck.sock"));
	ck_assert_int_ge(fd = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 8), 0);	/* never accepted, never read */
	snprintf(var, sizeof(var), "DLQ_CONTROL_SOCKET=%s", sa.sun_path);
	env[0] = var;
	env[1] = NULL;
	t0 = h_now_ms();
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "--timeout", "1s", "stats", NULL }, env, &out, &err), 1);
	ck_assert_int_ge(h_now_ms() - t0, 1000);
	ck_assert_str_eq(out, "");
	ck_assert_msg(strstr(err, "dlqctl: no answer from dlq-worker at ") ==
	    err && strstr(err, " within 1s: busy with a long request (a "
	    "purge?) or stuck; dlqctl --timeout DUR waits longer\n") != NULL,
	    "%s", err);
	free(out);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "--timeout", "soon", "stats", NULL }, env, &out, &err), 2);
	ck_assert_str_eq(err, "dlqctl: --timeout: bad duration 'soon' (e.g. "
	    "30s, 10m; 0s: no limit)\n");
	free(out);
	free(err);
	close(fd);
}
END_TEST

START_TEST(wrong_password_is_an_error_not_a_retry_loop)
{
	char url[256], env[300], *out;
	const char *p;
	int rc;

	snprintf(url, sizeof(url), "%s", h_url());
	p = strstr(url, "guest@");
	ck_assert_ptr_nonnull(p);
	snprintf(env, sizeof(env), "RABBITMQ_URL=amqp://guest:Wr0ngPassw0rd@%s",
	    p + strlen("guest@"));
	rc = h_run((const char *[]){ h_bin("dlq-worker"), "--assert-only",
	    NULL }, (const char *[]){ env, NULL }, &out);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_ptr_nonnull(strstr(out, "\"event\":\"broker_refused\""));
	ck_assert_ptr_null(strstr(out, "Wr0ngPassw0rd"));
	free(out);
}
END_TEST

static bool
port_free(int port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok;

	ck_assert_int_ge(fd, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* The AMQP port of the private node `make run` starts (0: none yet). */
static int node;

/* A port for it that nothing uses, with its management API's (+10000)
 * and its Erlang distribution's (+20000: scripts/broker.sh) free too. */
static int
free_node_port(void)
{
	int i, p;

	for (i = 0; i < 2000; i++) {
		p = 20000 + (int)(((unsigned)getpid() + (unsigned)i * 7919u) %
		    15000u);
		if (port_free(p) && port_free(p + 10000) && port_free(p + 20000))
			return p;
	}
	ck_abort_msg("no free port for a private node");
	return 0;
}

/* Stops the node and removes its directory (also at the exit of a test
 * that failed half way). */
static void
remove_node(void)
{
	char cmd[512];

	if (node == 0)
		return;
	snprintf(cmd, sizeof(cmd), "scripts/broker.sh stop %d >/dev/null 2>&1;"
	    " scripts/broker.sh kill %d >/dev/null 2>&1;"
	    " rm -rf /var/tmp/dlq-monitor-rabbitmq-%d", node, node, node);
	node = 0;
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove a private node\n");
}

/* The README's first command on a machine where no broker answers:
 * `make run` (scripts/run.sh) starts a private node at RABBITMQ_URL and
 * runs the worker in the foreground on the embedded defaults: the
 * built-in line topology (37 work queues, 36 monitored), the SQLite
 * archive, log-only alerts. Only the archive, the control socket and
 * the HTTP port are moved, into the test's own directory and port; the
 * outer make's flags are not passed on to the script's. */
START_TEST(make_run_starts_a_broker_and_the_worker_on_embedded_defaults)
{
	char url[64], amqp[96], archive[300], sock[300], http[64], want[128];
	/* the rest of the worker's variables blank (blank is unset), so
	 * the caller's environment does not change the defaults */
	const char *env[] = { amqp, archive, sock, http, "MAKEFLAGS=",
	    "MAKELEVEL=", "MFLAGS=", "DLQ_ALERT_COOLDOWN_MS=",
	    "DLQ_ALERT_WEBHOOK_FORMAT=", "DLQ_ALERT_WEBHOOK_URL=",
	    "DLQ_LOG_LEVEL=", "DLQ_TOPOLOGY_FILE=", "RABBITMQ_DLQ_SUFFIX=",
	    "RABBITMQ_MANAGEMENT_URL=", NULL };
	struct h_worker w;
	cJSON **ev, *list;
	char *err, *out;
	int n;

	ck_assert_msg(access("scripts/run.sh", X_OK) == 0,
	    "the tests run from the repository's top directory");
	node = free_node_port();
	atexit(remove_node);
	snprintf(url, sizeof(url), "amqp://guest:guest@localhost:%d/", node);
	snprintf(amqp, sizeof(amqp), "RABBITMQ_URL=%s", url);
	snprintf(archive, sizeof(archive), "DLQ_ARCHIVE_PATH=%s",
	    h_tmp_path("run.db"));
	snprintf(sock, sizeof(sock), "DLQ_CONTROL_SOCKET=%s",
	    h_tmp_path("run.sock"));
	snprintf(http, sizeof(http), "DLQ_HTTP_LISTEN=127.0.0.1:%d",
	    h_free_port());
	h_spawn(&w, "scripts/run.sh", NULL, env);
	if (!h_worker_wait(&w, "worker_started", 1, 150000)) {
		err = h_slurp(w.err);
		ck_abort_msg("the worker did not start: %s", err);
	}
	err = h_slurp(w.err);
	snprintf(want, sizeof(want), "broker: ready on %s", url);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	free(err);
	ev = h_worker_events(&w, "topology_asserted", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h_jnum(ev[0], "queues"), 37);
	ck_assert_int_eq(h_jnum(ev[0], "monitored"), 36);
	ck_assert_int_eq(h_jnum(ev[0], "conflicts"), 0);
	h_events_free(ev, n);
	ck_assert(h_worker_wait(&w, "consumer_started", 36, WAIT_MS));

	/* the demo traffic the README walks through */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "inject", "--queue", "message_send", "--count", "2", NULL }, env,
	    NULL, NULL), 0);
	ck_assert(h_worker_wait(&w, "dead_letter", 2, WAIT_MS));
	ck_assert(h_worker_wait(&w, "alert_digest", 1, WAIT_MS));
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "--json", "list", "--queue", "message_send", NULL }, env, &out,
	    NULL), 0);
	list = cJSON_Parse(out);
	ck_assert_msg(cJSON_GetArraySize(list) == 2, "%s", out);
	cJSON_Delete(list);
	free(out);
	/* into the one DLQ it does not consume: said */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "inject", "--queue", "message_received_trigger", "--count", "1",
	    NULL }, env, &out, NULL), 0);
	ck_assert_msg(strstr(out, "\nnote: message_received_trigger.dlq is not "
	    "monitored: the worker leaves its dead letters there") != NULL,
	    "%s", out);
	free(out);
	ck_assert_int_eq(h_worker_stop(&w, 10000, NULL), 0);
	ck_assert_int_eq(h_worker_count(&w, "dead_letter"), 2);
	ck_assert_int_eq(h_worker_count(&w, "shutdown"), 1);
	remove_node();
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("check-config");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, shipped_example_config_is_valid);
	tcase_add_test(tc, missing_file_is_named);
	tcase_add_test(tc, the_binaries_users_run_have_no_fault_hooks);
	tcase_add_test(tc, check_config_warns_as_a_start_does);
	tcase_add_test(tc, unknown_role_members_are_warned_about);
	tcase_add_test(tc, a_mask_list_that_leaves_out_defaults_is_warned_about);
	tcase_add_test(tc, syntax_error_names_the_line);
	tcase_add_test(tc, bad_values_are_refused_with_file_line_and_value);
	tcase_add_test(tc, a_queue_the_topology_lacks_is_refused_where_it_is_named);
	tcase_add_test(tc, env_errors_name_the_variable_never_the_password);
	tcase_add_test(tc, bad_topology_file_is_refused);
	tcase_add_test(tc, wrong_password_is_an_error_not_a_retry_loop);
	tcase_add_test(tc, dlqctl_names_what_a_mistyped_command_could_be);
	tcase_add_test(tc, dlq_worker_names_the_option_meant);
	tcase_add_test(tc, dlq_worker_version_names_its_archive_schema);
	tcase_add_test(tc, dlqctl_says_what_a_command_line_is_missing);
	tcase_add_test(tc, dlqctl_takes_no_abbreviated_option);
	tcase_add_test(tc, dlqctl_help_prints_the_usage_asked_for);
	tcase_add_test(tc, an_unreadable_config_says_dlqctl_needs_only_the_socket);
	tcase_add_test(tc, dlqctl_gives_up_on_a_worker_that_never_answers);
	suite_add_tcase(s, tc);
	/* a broker node's start and stop: up to a minute on a busy machine */
	tc = tcase_create("run");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc,
	    make_run_starts_a_broker_and_the_worker_on_embedded_defaults);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
