/* check_config.c - configuration: defaults, file, env, errors, the example. */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_file.h"
#include "../check_main.h"
#include "config.h"
#include "url.h"

static struct dlq_config c;
static struct dlq_buf errors;
static char path[64];

static const char *
write_conf(const char *text)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/check_config_XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void
setup(void)
{
	static const char *vars[] = { "RABBITMQ_URL", "RABBITMQ_DLQ_SUFFIX",
	    "DLQ_ALERT_WEBHOOK_URL", "DLQ_ALERT_COOLDOWN_MS", "DLQ_LOG_LEVEL",
	    "DLQ_TOPOLOGY_FILE", "DLQ_ARCHIVE_PATH",
	    "DLQ_ALERT_WEBHOOK_CA_CERT", "RABBITMQ_HOSTS", NULL };
	const char **v;
	char file[64];

	for (v = vars; *v != NULL; v++) {
		unsetenv(*v);
		snprintf(file, sizeof(file), "%s_FILE", *v);
		unsetenv(file);
	}
	dlq_buf_init(&errors);
	path[0] = '\0';
}

static void
teardown(void)
{
	dlq_config_release(&c);
	dlq_buf_release(&errors);
	if (path[0] != '\0')
		unlink(path);
}

static const char *
err(void)
{
	return errors.data ? errors.data : "";
}

/* A test's next file: what the last load kept goes, `text` is loaded. */
static int
load_next(const char *text)
{
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	unlink(path);
	write_conf(text);
	return dlq_config_load(&c, path, &errors);
}

START_TEST(defaults_match_the_source_system)
{
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_str_eq(c.broker.host, "localhost");
	ck_assert_int_eq(c.broker.port, 5672);
	ck_assert_str_eq(c.broker.vhost, "/");
	ck_assert_int_eq(c.cooldown_ms, 300000);
	ck_assert_ptr_null(c.webhook_url);
	ck_assert_ptr_null(c.dlq_suffix);
	ck_assert(c.reassert);
	ck_assert_int_eq(c.payload_max_bytes, 4096);
	ck_assert(dlq_strlist_contains(&c.mask_keys, "password"));
	ck_assert(dlq_strlist_contains(&c.mask_keys, "phone"));
	/* a session cookie is a credential */
	ck_assert(dlq_strlist_contains(&c.mask_keys, "cookie"));
	ck_assert(dlq_strlist_contains(&c.mask_keys, "session"));
	ck_assert_str_eq(c.error_headers.v[0], "x-error");
	ck_assert_int_eq(c.log_level, DLQ_LOG_INFO);
}
END_TEST

START_TEST(env_overrides_file)
{
	write_conf("alert = { cooldown_ms = 1000; webhook_url = "
	    "\"https://hooks.slack.com/services/T/B/x\"; };\n"
	    "topology = { dlq_suffix = \".dead\"; reassert = false; };\n");
	setenv("DLQ_ALERT_COOLDOWN_MS", "2500", 1);
	setenv("RABBITMQ_URL", "amqps://u:p%40ss@mq.example:5671/prod", 1);
	setenv("DLQ_LOG_LEVEL", "debug", 1);
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), 0);
	ck_assert(!c.reassert);
	ck_assert_int_eq(c.cooldown_ms, 2500);
	ck_assert_str_eq(c.dlq_suffix, ".dead");
	ck_assert_str_eq(c.broker.password, "p@ss");
	ck_assert_str_eq(c.broker.vhost, "prod");
	ck_assert(c.broker.tls);
	ck_assert_int_eq(c.broker.port, 5671);
	ck_assert_int_eq(c.log_level, DLQ_LOG_DEBUG);
	ck_assert_str_eq(c.url_safe, "amqps://u:***@mq.example:5671/prod");
}
END_TEST

START_TEST(syntax_error_names_file_and_line)
{
	char want[256];

	write_conf("rabbitmq = {\n  prefetch = 5\n  heartbeat = ;\n};\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	snprintf(want, sizeof(want), "%s:3: syntax error (a setting is "
	    "name = value; text in \"double quotes\", a group in { }, a list "
	    "in ( ))\n", path);
	ck_assert_str_eq(err(), want);

	/* an unquoted URL is the usual one */
	ck_assert_int_eq(load_next("rabbitmq = {\n  url = amqp://mq/;\n};\n"),
	    -1);
	snprintf(want, sizeof(want), "%s:2: syntax error (a setting", path);
	ck_assert_msg(strncmp(err(), want, strlen(want)) == 0, "%s", err());
}
END_TEST

/* A file saved with a UTF-8 byte order mark (as some Windows editors
 * do) reads as the same file without it: not "line 1: syntax error". */
START_TEST(a_byte_order_mark_is_not_part_of_the_file)
{
	ck_assert_int_eq(load_next("\xef\xbb\xbf" "alert = { cooldown_ms = 1500; "
	    "};\n"), 0);
	ck_assert_int_eq(c.cooldown_ms, 1500);
	/* only at the start: one later is text libconfig refuses */
	ck_assert_int_eq(load_next("alert = { cooldown_ms = 1500; };\n"
	    "\xef\xbb\xbf\n"), -1);
	/* a file shorter than the mark reads from its start: this one is
	 * a syntax error, not an empty file */
	ck_assert_int_eq(load_next("x;"), -1);
}
END_TEST

START_TEST(missing_file_is_an_error)
{
	ck_assert_int_eq(dlq_config_load(&c, "/nonexistent.conf", &errors), -1);
	ck_assert_str_eq(err(),
	    "/nonexistent.conf: cannot open: No such file or directory\n");
}
END_TEST

/* libconfig's scanner would exit the process reading a directory. */
START_TEST(a_directory_is_not_a_config_file)
{
	ck_assert_int_eq(dlq_config_load(&c, "/tmp", &errors), -1);
	ck_assert_str_eq(err(), "/tmp: cannot read: it is a directory\n");
}
END_TEST

START_TEST(out_of_range_numbers_are_refused_not_wrapped)
{
	char want[160];

	/* 2^32 + 5 would wrap to 5 in a 32-bit read */
	write_conf("rabbitmq = { prefetch = 4294967301L; };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	snprintf(want, sizeof(want), "%s:1: rabbitmq.prefetch: bad value "
	    "'4294967301': out of range 1..65535\n", path);
	ck_assert_str_eq(err(), want);
}
END_TEST

START_TEST(negative_cooldown_from_env_is_refused)
{
	setenv("DLQ_ALERT_COOLDOWN_MS", "-1", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "DLQ_ALERT_COOLDOWN_MS: alert.cooldown_ms: bad "
	    "value '-1': out of range 0..604800000\n");
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	/* a duration with a unit is taken, as dlqctl takes it */
	setenv("DLQ_ALERT_COOLDOWN_MS", "5m", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_int_eq(c.cooldown_ms, 300000);
	dlq_config_release(&c);
	setenv("DLQ_ALERT_COOLDOWN_MS", "5 min", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "DLQ_ALERT_COOLDOWN_MS: alert.cooldown_ms: bad "
	    "value '5 min': not a duration (a number and ms, s, m, h, d or w: "
	    "500ms, 30s, 5m, 7d; or a number of milliseconds)\n");
}
END_TEST

/* Digits only, as a number in the file: a blank before or after (a
 * quoted env file) or a sign is named, and so are too many digits. */
START_TEST(env_numbers_are_digits_only)
{
#define NOT_MS	"not a duration (a number and ms, s, m, h, d or w: 500ms, " \
	"30s, 5m, 7d; or a number of milliseconds)"
	static const char *const bad[][2] = {
		{ " 5000", NOT_MS },
		{ "5000 ", NOT_MS },
		{ "+5000", NOT_MS },
		{ "-", NOT_MS },
		{ "99999999999999999999", "out of range 0..604800000" },
	};
	char want[200];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dlq_buf_reset(&errors);
		setenv("DLQ_ALERT_COOLDOWN_MS", bad[i][0], 1);
		ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
		snprintf(want, sizeof(want), "DLQ_ALERT_COOLDOWN_MS: "
		    "alert.cooldown_ms: bad value '%s': %s\n", bad[i][0],
		    bad[i][1]);
		ck_assert_str_eq(err(), want);
		dlq_config_release(&c);
	}
	setenv("DLQ_ALERT_COOLDOWN_MS", "0", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_int_eq(c.cooldown_ms, 0);
	unsetenv("DLQ_ALERT_COOLDOWN_MS");
	/* in the file: a duration as a string, milliseconds as a number */
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	write_conf("alert = { cooldown_ms = \"5m\"; max_age_ms = \"7d\"; };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), 0);
	ck_assert_int_eq(c.cooldown_ms, 300000);
	ck_assert_int_eq(c.threshold_max_age_ms, 7LL * 86400000);
	dlq_config_release(&c);
	write_conf("alert = { cooldown_ms = \"5 m\"; };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_ptr_nonnull(strstr(err(), ":1: alert.cooldown_ms: bad value "
	    "'5 m': not a duration ("));
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	/* a count is not a duration */
	write_conf("alert = { max_chars = \"5m\"; };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_ptr_nonnull(strstr(err(), ":1: alert.max_chars: must be an "
	    "integer, not a string\n"));
#undef NOT_MS
}
END_TEST

/* A socket path bind() would refuse is refused by --check-config. */
START_TEST(control_socket_path_must_fit_a_unix_socket)
{
	char conf[300], want[400], sock[120];

	memset(sock, 'a', sizeof(sock));
	memcpy(sock, "/tmp/", 5);
	sock[107] = '\0';			/* 107 bytes: the most that fits */
	snprintf(conf, sizeof(conf), "control = {\n socket = \"%s\";\n};\n",
	    sock);
	write_conf(conf);
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), 0);
	dlq_config_release(&c);
	unlink(path);
	sock[107] = 'a';
	sock[108] = '\0';
	snprintf(conf, sizeof(conf), "control = {\n socket = \"%s\";\n};\n",
	    sock);
	write_conf(conf);
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	snprintf(want, sizeof(want), "%s:2: control.socket: bad value '%s': "
	    "too long for a Unix socket path (at most 107 bytes)\n", path, sock);
	ck_assert_str_eq(err(), want);
}
END_TEST

/* An empty path, socket or listen address (a template's unset variable)
 * is refused: the worker cannot run without them. */
START_TEST(settings_the_worker_needs_cannot_be_empty)
{
	char want[600];

	write_conf("archive = {\n path = \"\";\n};\ncontrol = {\n"
	    " socket = \"\";\n};\nhttp = { listen = \"\"; };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	snprintf(want, sizeof(want), "%s:7: http.listen: bad value '': must "
	    "not be empty (0 turns it off; leave the setting out for its "
	    "default)\n"
	    "%s:2: archive.path: bad value '': must not be empty (leave the "
	    "setting out for its default)\n"
	    "%s:5: control.socket: bad value '': must not be empty (leave the "
	    "setting out for its default)\n", path, path, path);
	ck_assert_str_eq(err(), want);
	/* SQLite's in-memory database is no archive */
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	setenv("DLQ_ARCHIVE_PATH", ":memory:", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "DLQ_ARCHIVE_PATH: archive.path: bad value "
	    "':memory:': must be a file: an archive in memory would lose every "
	    "dead letter the worker acked at its exit\n");
}
END_TEST

/* Each element of a list is checked, and its own line named. */
START_TEST(list_elements_are_checked_on_their_line)
{
	char want[900];

	write_conf("log = { mask_keys = [ \"token\",\n  \"\" ]; };\n"
	    "control = { operators = [ \"alice\", \"@\" ]; };\n"
	    "replay = {\n never = [ \"validation\",\n \"expierd\" ];\n"
	    " queues = ( { queue = \"\"; } );\n};\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	snprintf(want, sizeof(want),
	    "%s:2: log.mask_keys: bad value '': element 2: must not be empty\n"
	    "%s:3: control.operators: bad value '@': element 2: a group needs "
	    "its name after the @\n"
	    "%s:6: replay.never: bad value 'expierd': element 2: unknown class "
	    "(known: transient, rate_limited, validation, configuration, "
	    "contract, security, expired, manual, unknown)\n"
	    "%s:7: replay.queues: each entry needs queue = \"name\"\n",
	    path, path, path, path);
	ck_assert_str_eq(err(), want);
}
END_TEST

/* libconfig 1.5 keeps the low 32 bits of a literal without L: 2^32 +
 * 300000 would arrive as 300000, in range. It is refused as written. */
START_TEST(numbers_too_large_for_32_bits_are_refused_not_wrapped)
{
	struct dlq_replay_policy p;
	char want[600];

	write_conf("alert = {\n cooldown_ms = 4295267296;\n};\n"
	    "redrive = { trip_ratio = 4294967296; };\n"
	    "replay = { queues = ( { queue = \"a\"; max_replays = 4294967297;"
	    " } ); };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	snprintf(want, sizeof(want), "%s:2: alert.cooldown_ms: bad value "
	    "'4295267296': out of range 0..604800000\n"
	    "%s:5: replay.queues: max_replays: bad value '4294967297': out of "
	    "range 0..1000\n"
	    "%s:4: redrive.trip_ratio: bad value '4.29497e+09': must be 0.0 .. "
	    "1.0\n", path, path, path);
	ck_assert_str_eq(err(), want);
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	unlink(path);
	/* a large value that fits is kept whole */
	write_conf("replay = { queues = ( { queue = \"a\"; max_age_ms = "
	    "4294967296; } ); };\n");
	ck_assert_msg(dlq_config_load(&c, path, &errors) == 0, "%s", err());
	dlq_config_replay_policy(&c, "a", &p);
	ck_assert_int_eq(p.max_age_ms, 4294967296LL);
}
END_TEST

/* --check-config refuses what the HTTP server could not bind, and says
 * how to write what it can: an IPv4 address or localhost, or an IPv6
 * one in brackets. */
START_TEST(http_listen_must_be_an_address_the_server_can_bind)
{
	static const struct {
		const char	*v;
		const char	*why;
	} bad[] = {
		{ "metrics.example:9464", "HOST must be an IPv4 address or "
		    "localhost, or [IPv6] (e.g. 0.0.0.0:9464 or [::]:9464 for "
		    "every interface)" },
		{ "::1:9464", "an IPv6 address goes in brackets: [ADDR]:PORT "
		    "(e.g. [::]:9464)" },
		{ "[::1]9464", "expected HOST:PORT (e.g. 127.0.0.1:9464), "
		    "[IPv6]:PORT (e.g. [::1]:9464) or 0" },
		{ "[::1:9464", "expected HOST:PORT (e.g. 127.0.0.1:9464), "
		    "[IPv6]:PORT (e.g. [::1]:9464) or 0" },
		{ "[ab:cd:zz::1]:9464", "inside [...] an IPv6 address (e.g. [::] "
		    "for every interface, [::1] for this machine only)" },
		{ "[]:9464", "expected HOST:PORT (e.g. 127.0.0.1:9464), "
		    "[IPv6]:PORT (e.g. [::1]:9464) or 0" },
		{ "[::]:70000", "the port must be a number 1..65535" },
		{ "9464", "expected HOST:PORT (e.g. 127.0.0.1:9464), "
		    "[IPv6]:PORT (e.g. [::1]:9464) or 0" },
	};
	struct sockaddr_storage ss;
	char want[300], conf[128];
	size_t i;

	write_conf("http = { listen = \"localhost:9464\"; };\n");
	ck_assert_msg(dlq_config_load(&c, path, &errors) == 0, "%s", err());
	dlq_config_release(&c);
	unlink(path);
	write_conf("http = { listen = \"[::]:9464\"; };\n");
	ck_assert_msg(dlq_config_load(&c, path, &errors) == 0, "%s", err());
	dlq_config_release(&c);
	unlink(path);
	ck_assert_ptr_null(dlq_url_listen("localhost:80", &ss));
	ck_assert_int_eq(ss.ss_family, AF_INET);
	ck_assert_int_eq(ntohs(((struct sockaddr_in *)&ss)->sin_port), 80);
	ck_assert_int_eq(ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr),
	    INADDR_LOOPBACK);
	ck_assert_ptr_null(dlq_url_listen("[::1]:9464", &ss));
	ck_assert_int_eq(ss.ss_family, AF_INET6);
	ck_assert_int_eq(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 9464);
	ck_assert(IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->
	    sin6_addr));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dlq_buf_reset(&errors);
		snprintf(conf, sizeof(conf), "http = { listen = \"%s\"; };\n",
		    bad[i].v);
		write_conf(conf);
		ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
		snprintf(want, sizeof(want), "%s:1: http.listen: bad value "
		    "'%s': %s\n", path, bad[i].v, bad[i].why);
		ck_assert_str_eq(err(), want);
		dlq_config_release(&c);
		unlink(path);
	}
}
END_TEST

/* The env var repeating a target of the file would post every digest
 * twice to one channel. The error names the host, never the URL. */
START_TEST(the_same_webhook_twice_is_refused)
{
	char want[400];

	write_conf("alert = { targets = ( { url = \"https://hooks.slack.com/"
	    "services/T0/B0/s3cret\"; } ); };\n");
	setenv("DLQ_ALERT_WEBHOOK_URL", "https://hooks.slack.com/services/T0/"
	    "B0/s3cret", 1);
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	snprintf(want, sizeof(want), "%s: alert: webhook targets 1 and 2 have "
	    "the same URL (host hooks.slack.com; the first is "
	    "alert.webhook_url or DLQ_ALERT_WEBHOOK_URL when set): each digest "
	    "would be posted there twice\n", path);
	ck_assert_str_eq(err(), want);
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	setenv("DLQ_ALERT_WEBHOOK_URL", "https://hooks.slack.com/services/T0/"
	    "B1/other", 1);
	ck_assert_msg(dlq_config_load(&c, path, &errors) == 0, "%s", err());
	ck_assert_uint_eq(c.n_targets, 2);
}
END_TEST

START_TEST(bad_urls_are_refused_without_the_password)
{
	static const char *bad[] = {
		"http://u:s3cret@h/", "amqp://u:s3cret@h:0/",
		"amqp://u:s3cret@h:70000/", "amqp://u:s3cret@h /",
		"amqp://u:s3cret@h/\n", "amqp://u:s3cret@h/v\x7f", NULL,
	};
	const char **u;

	for (u = bad; *u != NULL; u++) {
		setenv("RABBITMQ_URL", *u, 1);
		ck_assert_msg(dlq_config_load(&c, NULL, &errors) == -1, "%s", *u);
		ck_assert_ptr_nonnull(strstr(err(), "RABBITMQ_URL: rabbitmq.url"));
		ck_assert_ptr_null(strstr(err(), "s3cret"));
		dlq_config_release(&c);
		dlq_buf_reset(&errors);
	}
}
END_TEST

/* What a pasted URL most often gets wrong, said as such; the password
 * masked even when a character of it that is not percent-encoded
 * broke the URL. */
START_TEST(a_bad_url_says_what_is_wrong_without_the_password)
{
	static const char *const bad[][3] = {
		{ "amqp://u:s3/cr3t@h/", "amqp://u:***@h/", "a '/', '?', '#' or "
		    "'@' in the user name or password must be percent-encoded" },
		{ "amqp://u:s3?cr3t@h/", "amqp://u:***@h/", "a '/', '?', '#' or "
		    "'@' in the user name or password must be percent-encoded" },
		{ "amqps://u:s3#cr3t@h:5671/v", "amqps://u:***@h:5671/v", "a '/', "
		    "'?', '#' or '@' in the user name or password must be" },
		{ "amqp://u:s3@cr3t@h/", "amqp://u:***@h/", "(%2F, %3F, %23, "
		    "%40)" },
		{ "amqp://u:s3%cr3t@h/", "amqp://u:***@h/", "a '%' must start a "
		    "percent-encoded byte (%25 for '%' itself)" },
		{ "amqp://u:s3cr3t@h/v?heartbeat=30", "amqp://u:***@h/v?heartbeat"
		    "=30", "query parameters are not read (set "
		    "rabbitmq.heartbeat" },
		{ "amqp://u:s3cr3t@h/a/b", "amqp://u:***@h/a/b", "a '/' in the "
		    "vhost must be percent-encoded (%2F" },
		{ "amqp://u:s3cr3t@h:65536/", "amqp://u:***@h:65536/",
		    "': the port must be a number 1..65535" },
		{ "amqp://u:s3cr3t@h:0/", "amqp://u:***@h:0/",
		    "': the port must be a number 1..65535" },
		{ "amqp://u:s3cr3t@h:amqp/", "amqp://u:***@h:amqp/",
		    "': the port must be a number 1..65535" },
		{ "amqp://u:s3cr3t@[::1/", "amqp://u:***@[::1/", "an IPv6 address "
		    "needs its closing ']'" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("RABBITMQ_URL", bad[i][0], 1);
		ck_assert_msg(dlq_config_load(&c, NULL, &errors) == -1, "%s",
		    bad[i][0]);
		ck_assert_msg(strstr(err(), bad[i][1]) != NULL && strstr(err(),
		    bad[i][2]) != NULL, "%s: %s", bad[i][0], err());
		ck_assert_msg(strstr(err(), "cr3t") == NULL, "%s", err());
		dlq_config_release(&c);
		dlq_buf_reset(&errors);
	}
	/* a password that needed no encoding, and one that has it */
	setenv("RABBITMQ_URL", "amqp://u:s3%2Fcr3t@h:5672/%2F", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_str_eq(c.broker.password, "s3/cr3t");
	ck_assert_str_eq(c.broker.vhost, "/");
}
END_TEST

/* archive.url: a PostgreSQL connection string in either of libpq's
 * forms; what is plainly none is refused at load, never echoed (a
 * password may be in it); unset, the archive is SQLite's. */
START_TEST(archive_url_takes_libpq_forms_and_is_never_echoed)
{
	static const char *const good[] = {
		"postgresql://dlq:s3cr3t@db.example:5432/dlq?sslmode=verify-full",
		"postgres://db.example/dlq",
		"host=db.example dbname=dlq user=dlq password=s3cr3t",
	};
	static const char *const bad[][2] = {
		{ "mysql://dlq:s3cr3t@db/dlq", "expected a postgresql:// URL" },
		{ "db.example:5432/s3cr3t", "expected postgresql://user@host:"
		    "port/dbname or libpq's keywords" },
		{ "postgresql://dlq:s3cr3t@db/dlq\n", "must not contain control "
		    "characters" },
	};
	size_t i;

	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_ptr_null(c.archive_url);
	dlq_config_release(&c);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		setenv("DLQ_ARCHIVE_URL", good[i], 1);
		ck_assert_msg(dlq_config_load(&c, NULL, &errors) == 0, "%s: %s",
		    good[i], err());
		ck_assert_str_eq(c.archive_url, good[i]);
		dlq_config_release(&c);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("DLQ_ARCHIVE_URL", bad[i][0], 1);
		ck_assert_msg(dlq_config_load(&c, NULL, &errors) == -1, "%s",
		    bad[i][0]);
		ck_assert_msg(strstr(err(), "archive.url") != NULL &&
		    strstr(err(), bad[i][1]) != NULL, "%s: %s", bad[i][0],
		    err());
		ck_assert_msg(strstr(err(), "s3cr3t") == NULL, "%s", err());
		dlq_config_release(&c);
		dlq_buf_reset(&errors);
	}
	unsetenv("DLQ_ARCHIVE_URL");
}
END_TEST

START_TEST(webhook_must_be_http_and_is_never_echoed)
{
	setenv("DLQ_ALERT_WEBHOOK_URL", "ftp://hooks/secret-path", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "DLQ_ALERT_WEBHOOK_URL: alert.webhook_url: must "
	    "start with http:// or https://\n");
	/* pasted from a secret file with its newline: refused now, not at
	 * the first digest; still never echoed */
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	setenv("DLQ_ALERT_WEBHOOK_URL", "https://hooks.slack.com/services/T0/"
	    "B0/secret\n", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "DLQ_ALERT_WEBHOOK_URL: alert.webhook_url: must "
	    "not contain spaces or control characters (a trailing newline?)\n");
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	setenv("DLQ_ALERT_WEBHOOK_URL", "https:///services/secret", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "DLQ_ALERT_WEBHOOK_URL: alert.webhook_url: has "
	    "no host\n");
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	unsetenv("DLQ_ALERT_WEBHOOK_URL");
	write_conf("alert = { targets = ( { url = \"https://chat.googleapis.com/"
	    "v1/spaces/x?key=secret \"; } ); };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_ptr_nonnull(strstr(err(), ":1: alert.targets: url must not "
	    "contain spaces or control characters"));
	ck_assert_ptr_null(strstr(err(), "secret"));
}
END_TEST

/* What libcurl would refuse at the first digest, hours later, is refused
 * at load: a port typo, a broken IPv6 literal, a chat URL cut short. */
START_TEST(a_webhook_url_curl_cannot_use_is_refused_at_load)
{
	static const char *const bad[][2] = {
		{ "https://hooks.example:8O80/secret",
		    "has a port that is not a number 1..65535" },
		{ "https://hooks.example:99999/secret",
		    "has a port that is not a number 1..65535" },
		{ "https://hooks.example:0/secret",
		    "has a port that is not a number 1..65535" },
		{ "http://[fd00::1/secret", "has a bad IPv6 address" },
		{ "https://hooks.slack.com", "has no path: a Slack, Google "
		    "Chat or Discord webhook URL is the whole address" },
		{ "https://chat.googleapis.com/", "has no path" },
		{ "https://discord.com", "has no path" },
	};
	static const char *const good[] = {
		"https://hooks.slack.com/services/T0/B0/secret",
		"http://[::1]:8080/hook", "http://127.0.0.1:9/",
		"https://hooks.example/", "https://hooks.example:443/x?y=1",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dlq_config_release(&c);
		dlq_buf_reset(&errors);
		setenv("DLQ_ALERT_WEBHOOK_URL", bad[i][0], 1);
		ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
		ck_assert_msg(strstr(err(), "DLQ_ALERT_WEBHOOK_URL: alert."
		    "webhook_url: ") == err() && strstr(err(), bad[i][1]) !=
		    NULL, "%s: %s", bad[i][0], err());
		ck_assert_ptr_null(strstr(err(), "secret"));
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		dlq_config_release(&c);
		dlq_buf_reset(&errors);
		setenv("DLQ_ALERT_WEBHOOK_URL", good[i], 1);
		ck_assert_msg(dlq_config_load(&c, NULL, &errors) == 0, "%s: %s",
		    good[i], err());
	}
	unsetenv("DLQ_ALERT_WEBHOOK_URL");
	/* the management API's URL is read the same way */
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	setenv("RABBITMQ_MANAGEMENT_URL", "http://localhost:156722/", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "RABBITMQ_MANAGEMENT_URL: rabbitmq."
	    "management_url: has a port that is not a number 1..65535\n");
	unsetenv("RABBITMQ_MANAGEMENT_URL");
}
END_TEST

/* The format follows the host the chat gave the URL on; Discord's URL
 * with /slack at its end takes Slack's text; a format set wins. */
START_TEST(the_format_follows_the_webhook_host)
{
	static const struct {
		const char		*url;
		enum dlq_alert_format	 want;
	} cases[] = {
		{ "https://hooks.slack.com/services/T0/B0/x", DLQ_FORMAT_SLACK },
		{ "https://Hooks.Slack.COM/services/T0/B0/x", DLQ_FORMAT_SLACK },
		{ "https://chat.googleapis.com/v1/spaces/A/messages?key=k",
		    DLQ_FORMAT_GOOGLE_CHAT },
		{ "https://discord.com/api/webhooks/1/t", DLQ_FORMAT_DISCORD },
		{ "https://ptb.discord.com/api/webhooks/1/t",
		    DLQ_FORMAT_DISCORD },
		{ "https://discordapp.com/api/webhooks/1/t?wait=true",
		    DLQ_FORMAT_DISCORD },
		{ "https://discord.com/api/webhooks/1/t/slack",
		    DLQ_FORMAT_SLACK },
		{ "https://discord.com/api/webhooks/1/t/slack?wait=true",
		    DLQ_FORMAT_SLACK },
		{ "https://notdiscord.com/api/webhooks/1/t", DLQ_FORMAT_PLAIN },
		{ "https://discord.com.example/api/webhooks/1/t",
		    DLQ_FORMAT_PLAIN },
		{ "https://hooks.example/slack", DLQ_FORMAT_PLAIN },
		/* Microsoft Teams: no format of ours */
		{ "https://prod-27.westeurope.logic.azure.com:443/workflows/"
		    "a1/triggers/manual/paths/invoke?sig=s", DLQ_FORMAT_AUTO },
		{ "https://default1.ab.environment.api.powerplatform.com/"
		    "powerautomate/automations/direct/workflows/a1",
		    DLQ_FORMAT_AUTO },
		{ "https://api.powerautomate.com/webhook/a1", DLQ_FORMAT_AUTO },
		{ "https://emea.flow.microsoft.com/webhook/a1",
		    DLQ_FORMAT_AUTO },
		{ "https://prod-01.usgovtexas.logic.azure.us:443/workflows/a1/"
		    "triggers/manual/paths/invoke?sig=s", DLQ_FORMAT_AUTO },
		{ "https://gov.example/powerautomate/automations/direct/a1",
		    DLQ_FORMAT_AUTO },
		/* only the path counts, not its query */
		{ "https://hooks.example/a1?next=/powerautomate/",
		    DLQ_FORMAT_PLAIN },
		{ "https://contoso.webhook.office.com/webhookb2/a1",
		    DLQ_FORMAT_PLAIN },	/* a connector of before: {"text"} */
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(dlq_alert_format_detect(cases[i].url) ==
		    cases[i].want, "%s: %s", cases[i].url,
		    dlq_alert_format_name(dlq_alert_format_detect(cases[i].url)));
	setenv("DLQ_ALERT_WEBHOOK_URL", "https://discord.com/api/webhooks/1/t", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_int_eq(c.targets[0].format, DLQ_FORMAT_DISCORD);
	dlq_config_release(&c);
	setenv("DLQ_ALERT_WEBHOOK_FORMAT", "plain", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_int_eq(c.targets[0].format, DLQ_FORMAT_PLAIN);
	dlq_config_release(&c);
	/* a Teams workflow answers 202 and drops a body that is not an
	 * Adaptive Card: refused, unless a format is set on purpose */
	setenv("DLQ_ALERT_WEBHOOK_URL", "https://prod-27.westeurope.logic."
	    "azure.com/workflows/a1/triggers/manual/paths/invoke?sig=s3cr3t", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_int_eq(c.targets[0].format, DLQ_FORMAT_PLAIN);
	dlq_config_release(&c);
	unsetenv("DLQ_ALERT_WEBHOOK_FORMAT");
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "(defaults): alert: webhook target 1 (host "
	    "prod-27.westeurope.logic.azure.com; the first is alert.webhook_url "
	    "or DLQ_ALERT_WEBHOOK_URL when set) is Microsoft Teams, whose "
	    "workflows take Adaptive Cards only: they would answer 202 to a "
	    "digest and drop it. Set its format (\"plain\" posts {\"text\": "
	    "...}) only if your workflow reads that\n");
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	setenv("DLQ_ALERT_WEBHOOK_FORMAT", "teams", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_msg(strstr(err(), "expected auto, slack, google_chat, "
	    "discord or plain") != NULL, "%s", err());
	unsetenv("DLQ_ALERT_WEBHOOK_FORMAT");
	unsetenv("DLQ_ALERT_WEBHOOK_URL");
}
END_TEST

/* Spaces, C0 controls and DEL make no queue name anyone can type. */
START_TEST(a_dlq_suffix_with_a_control_character_is_refused)
{
	static const char *bad[] = {
		".dlq\n", ".d lq", ".dl\x7fq", "\t", NULL,
	};
	const char **s;

	for (s = bad; *s != NULL; s++) {
		setenv("RABBITMQ_DLQ_SUFFIX", *s, 1);
		ck_assert_msg(dlq_config_load(&c, NULL, &errors) == -1, "%s",
		    *s);
		ck_assert_msg(strstr(err(), "RABBITMQ_DLQ_SUFFIX: topology."
		    "dlq_suffix: bad value") != NULL && strstr(err(),
		    "must not contain spaces or control characters") != NULL,
		    "%s", err());
		dlq_config_release(&c);
		dlq_buf_reset(&errors);
	}
	setenv("RABBITMQ_DLQ_SUFFIX", ".dead-letters", 1);
	ck_assert_msg(dlq_config_load(&c, NULL, &errors) == 0, "%s", err());
	ck_assert_str_eq(c.dlq_suffix, ".dead-letters");
}
END_TEST

/* A value pasted with its newline is refused and shown on one line. */
START_TEST(control_characters_in_paths_are_refused_and_shown_escaped)
{
	setenv("DLQ_ARCHIVE_PATH", "/var/lib/dlq/archive.db\n", 1);
	setenv("DLQ_LOG_LEVEL", "info\r", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "DLQ_LOG_LEVEL: log.level: bad value "
	    "'info\\r': expected debug, info, warn or error\nDLQ_ARCHIVE_PATH: "
	    "archive.path: bad value '/var/lib/dlq/archive.db\\n': must not "
	    "contain control characters (a trailing newline?)\n");
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	/* a space is a file name's business */
	setenv("DLQ_ARCHIVE_PATH", "/tmp/my archive.db", 1);
	unsetenv("DLQ_LOG_LEVEL");
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_str_eq(c.archive_path, "/tmp/my archive.db");
}
END_TEST

START_TEST(every_problem_is_reported_at_once)
{
	write_conf("rabbitmq = { prefetch = \"ten\"; heartbit = 3; };\n"
	    "log = { level = \"loud\"; mask_keys = [ 1 ]; };\nother = 1;\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_ptr_nonnull(strstr(err(), "unknown setting 'rabbitmq.heartbit'"));
	ck_assert_ptr_nonnull(strstr(err(), "rabbitmq.prefetch: must be an "
	    "integer, not a string"));
	ck_assert_ptr_nonnull(strstr(err(), "log.level: bad value 'loud'"));
	ck_assert_ptr_nonnull(strstr(err(), "unknown setting 'other'"));
}
END_TEST

/* A misspelt setting, or one without its unit or in the wrong group, is
 * refused with the one meant; one near none is refused alone. */
START_TEST(an_unknown_setting_names_the_one_meant)
{
	static const char *const said[] = {
		":1: unknown setting 'alert.cooldown' (did you mean "
		"'alert.cooldown_ms'?)\n",
		":1: unknown setting 'alert.webhook_formt' (did you mean "
		"'alert.webhook_format'?)\n",
		":2: unknown setting 'alerts' (did you mean 'alert'?)\n",
		":3: unknown setting 'rabbitmq.cooldown_ms' (did you mean "
		"'alert.cooldown_ms'?)\n",
		":4: replay.queues: unknown setting 'max_age' (did you mean "
		"'max_age_ms'?)\n",
		":5: unknown setting 'log.colour'\n",
		":6: classify.rules: unknown setting 'colour' (match, reason, "
		"queue, class, hint, link)\n",
	};
	size_t i;

	write_conf("alert = { cooldown = 5; webhook_formt = \"slack\"; };\n"
	    "alerts = { };\nrabbitmq = { cooldown_ms = 1; };\n"
	    "replay = { queues = ( { queue = \"q\"; max_age = 1; } ); };\n"
	    "log = { colour = 1; };\nclassify = { rules = ( { match = \"x\"; "
	    "class = \"transient\"; colour = 1; } ); };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	for (i = 0; i < sizeof(said) / sizeof(said[0]); i++)
		ck_assert_msg(strstr(err(), said[i]) != NULL, "%s not in %s",
		    said[i], err());
}
END_TEST

/* A topology file is found next to the config file, and one that cannot
 * be read is refused where it was named (the file's line, or the
 * variable), once the variable has had its say. */
START_TEST(topology_path_is_relative_to_the_config_file)
{
	char conf[300], topo[64], want[512];

	ck_assert_int_eq(load_next("topology = { file = \"topo/line.conf\"; "
	    "};\n"), -1);
	snprintf(want, sizeof(want), "%s:1: topology.file: cannot read "
	    "'/tmp/topo/line.conf': No such file or directory\n", path);
	ck_assert_str_eq(err(), want);

	/* the variable replaces the file's path: that one is not read */
	setenv("DLQ_TOPOLOGY_FILE", path, 1);
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), 0);
	ck_assert_str_eq(c.topology_file, path);
	setenv("DLQ_TOPOLOGY_FILE", "/tmp", 1);
	dlq_config_release(&c);
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_str_eq(err(), "DLQ_TOPOLOGY_FILE: topology.file: cannot read "
	    "'/tmp': not a regular file\n");
	unsetenv("DLQ_TOPOLOGY_FILE");

	/* a relative name that is there: the previous config file */
	snprintf(topo, sizeof(topo), "%s", path);
	snprintf(conf, sizeof(conf), "topology = { file = \"%s\"; };\n",
	    topo + strlen("/tmp/"));
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	write_conf(conf);
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), 0);
	ck_assert_str_eq(c.topology_file, topo);
	unlink(topo);
}
END_TEST

/* The CA file is found next to the config file, and one that cannot be
 * read is refused on its line, not at the first connection. */
START_TEST(the_tls_ca_file_is_relative_to_the_config_file_and_readable)
{
	char ca[300];

	write_conf("# ca\nrabbitmq = {\n  tls_ca_cert = \"dlq-test-ca.pem\";\n};\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_msg(strstr(err(), ":3: rabbitmq.tls_ca_cert: cannot read "
	    "'/tmp/dlq-test-ca.pem': No such file or directory") != NULL,
	    "%s", err());
	dlq_config_release(&c);
	dlq_buf_reset(&errors);

	/* the same file once the CA is there, in its directory (/tmp) */
	snprintf(ca, sizeof(ca), "/tmp/dlq-test-ca.pem");
	fclose(fopen(ca, "w"));
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), 0);
	ck_assert_str_eq(c.tls_ca_cert, ca);
	unlink(ca);

	ck_assert_int_eq(load_next("rabbitmq = { tls_ca_cert = \"/tmp\"; };\n"),
	    -1);
	ck_assert_ptr_nonnull(strstr(err(), "cannot read '/tmp': not a "
	    "regular file"));
	ck_assert_int_eq(load_next("rabbitmq = { tls_ca_cert = \"\"; };\n"),
	    -1);
	ck_assert_ptr_nonnull(strstr(err(), "must not be empty (leave the "
	    "setting out for the system's CAs)"));
}
END_TEST

/* A webhook's CA file: alert.webhook_ca_cert (or its env var) for the
 * first target, ca_cert in alert.targets for the others; relative to the
 * config file, readable, refused on its line otherwise. */
START_TEST(a_webhook_ca_file_goes_with_its_target)
{
	write_conf("alert = {\n webhook_url = \"https://chat.example/a\";\n"
	    " webhook_ca_cert = \"dlq-test-no-ca.pem\";\n targets = (\n"
	    "  { url = \"https://chat.example/b\"; ca_cert = \"\"; },\n"
	    "  { url = \"https://chat.example/c\"; ca_cert = 3; },\n"
	    "  { url = \"https://chat.example/d\"; ca_cert = \"/tmp\"; "
	    "cacert = \"x\"; } ); };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_msg(strstr(err(), ":3: alert.webhook_ca_cert: cannot read "
	    "'/tmp/dlq-test-no-ca.pem': No such file or directory\n") != NULL,
	    "%s", err());
	ck_assert_msg(strstr(err(), ":5: alert.targets: ca_cert must not be "
	    "empty (leave it out for the system's CAs)\n") != NULL, "%s",
	    err());
	ck_assert_msg(strstr(err(), ":6: alert.targets: ca_cert must be a "
	    "string (a PEM file name)\n") != NULL, "%s", err());
	ck_assert_msg(strstr(err(), ":7: alert.targets: ca_cert: cannot read "
	    "'/tmp': not a regular file\n") != NULL, "%s", err());
	ck_assert_msg(strstr(err(), ":7: alert.targets: unknown setting "
	    "'cacert' (did you mean 'ca_cert'?)\n") != NULL, "%s", err());

	/* relative to the config file's directory, /tmp */
	ck_assert_int_eq(load_next("alert = {\n webhook_url = "
	    "\"https://chat.example/a\";\n webhook_ca_cert = "
	    "\"../etc/hostname\";\n targets = ( { url = "
	    "\"https://chat.example/b\"; ca_cert = \"../etc/passwd\"; }, "
	    "{ url = \"https://chat.example/c\"; } ); };\n"), 0);
	ck_assert_uint_eq(c.n_targets, 3);
	ck_assert_str_eq(c.targets[0].ca_cert, "/tmp/../etc/hostname");
	ck_assert_str_eq(c.targets[1].ca_cert, "/tmp/../etc/passwd");
	ck_assert_ptr_null(c.targets[2].ca_cert);

	/* the env var: as given, and checked the same way */
	setenv("DLQ_ALERT_WEBHOOK_CA_CERT", "/nonexistent/ca.pem", 1);
	ck_assert_int_eq(load_next("alert = { webhook_url = "
	    "\"https://chat.example/a\"; };\n"), -1);
	ck_assert_str_eq(err(), "DLQ_ALERT_WEBHOOK_CA_CERT: "
	    "alert.webhook_ca_cert: cannot read '/nonexistent/ca.pem': No "
	    "such file or directory\n");
	setenv("DLQ_ALERT_WEBHOOK_CA_CERT", "/etc/hostname", 1);
	ck_assert_int_eq(load_next("alert = { webhook_url = "
	    "\"https://chat.example/a\"; };\n"), 0);
	ck_assert_str_eq(c.targets[0].ca_cert, "/etc/hostname");
}
END_TEST

/* A secret file, as Docker and Kubernetes mount them: VAR_FILE names the
 * file holding VAR's value (trailing newline dropped); errors name the
 * _FILE variable and never show the content. */
START_TEST(a_variable_can_come_from_a_file)
{
	char secret[64], hook[64];
	int fd;

	snprintf(secret, sizeof(secret), "/tmp/check_config_url_XXXXXX");
	ck_assert_int_ge(fd = mkstemp(secret), 0);
	ck_assert_int_eq(write(fd, "amqps://u:s3cr%40t@mq.example/prod\n", 35),
	    35);
	close(fd);
	setenv("RABBITMQ_URL_FILE", secret, 1);
	setenv("DLQ_ALERT_COOLDOWN_MS_FILE", secret, 1);	/* not a number */
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_msg(strncmp(err(), "DLQ_ALERT_COOLDOWN_MS_FILE: alert."
	    "cooldown_ms: bad value 'amqps://u:", 60) == 0, "%s", err());
	unsetenv("DLQ_ALERT_COOLDOWN_MS_FILE");
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_str_eq(c.broker.host, "mq.example");
	ck_assert_str_eq(c.broker.password, "s3cr@t");
	ck_assert_str_eq(c.broker.vhost, "prod");
	dlq_config_release(&c);

	/* both ways at once: which one was meant? */
	setenv("RABBITMQ_URL", "amqp://localhost/", 1);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "RABBITMQ_URL and RABBITMQ_URL_FILE are both "
	    "set: one of them must go\n");
	unsetenv("RABBITMQ_URL");
	unlink(secret);
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_msg(strstr(err(), "RABBITMQ_URL_FILE: '/tmp/check_config_url_")
	    == err() && strstr(err(), "': No such file or directory\n") != NULL,
	    "%s", err());
	unsetenv("RABBITMQ_URL_FILE");

	/* a bad secret is named by its variable, its content never shown */
	snprintf(hook, sizeof(hook), "/tmp/check_config_hook_XXXXXX");
	ck_assert_int_ge(fd = mkstemp(hook), 0);
	ck_assert_int_eq(write(fd, "ftp://hooks.example/T0/s3cr3tP4th\r\n",
	    35), 35);
	close(fd);
	setenv("DLQ_ALERT_WEBHOOK_URL_FILE", hook, 1);
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "DLQ_ALERT_WEBHOOK_URL_FILE: alert.webhook_url: "
	    "must start with http:// or https://\n");
	/* empty, a directory */
	ck_assert_int_eq(truncate(hook, 0), 0);
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_msg(strstr(err(), "': empty\n") != NULL, "%s", err());
	ck_assert_int_ge(fd = open(hook, O_WRONLY), 0);
	ck_assert_int_eq(write(fd, "http://a\0b", 10), 10);
	close(fd);
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_msg(strstr(err(), "': holds a NUL byte\n") != NULL, "%s",
	    err());
	unlink(hook);
	setenv("DLQ_ALERT_WEBHOOK_URL_FILE", "/tmp", 1);
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), -1);
	ck_assert_str_eq(err(), "DLQ_ALERT_WEBHOOK_URL_FILE: '/tmp': not a "
	    "regular file\n");
}
END_TEST

/* rabbitmq.hosts: the cluster's other nodes, HOST[:PORT] (the URL's port
 * by default), from the file or RABBITMQ_HOSTS (commas); a user, a path
 * or a bad port is refused on its element. */
START_TEST(other_nodes_are_host_and_port)
{
	static const char *const bad[][2] = {
		{ "", "element 1: must not be empty" },
		{ "node2:0", "element 1: the port must be a number 1..65535" },
		{ "node2:5672x", "element 1: the port must be a number 1..65535" },
		{ "node2:", "element 1: the port must be a number 1..65535" },
		{ "guest@node2", "element 1: expected HOST, HOST:PORT or "
		    "[IPv6]:PORT (a host name or address, no user or path" },
		{ "node2/vhost", "element 1: expected HOST" },
		{ "[::1", "element 1: expected HOST, HOST:PORT or [IPv6]:PORT" },
		{ "node 2", "element 1: expected HOST" },
	};
	char text[160], host[64];
	size_t i;
	int port;

	write_conf("rabbitmq = { url = \"amqp://u:p@node1:5673/\"; hosts = "
	    "[ \"node2\", \"node3:5680\", \"[fd00::3]:5681\" ]; };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), 0);
	ck_assert_uint_eq(c.hosts.n, 3);
	ck_assert_ptr_null(dlq_url_host_port(c.hosts.v[0], 5673, host,
	    sizeof(host), &port));
	ck_assert_str_eq(host, "node2");
	ck_assert_int_eq(port, 5673);
	ck_assert_ptr_null(dlq_url_host_port(c.hosts.v[1], 5673, host,
	    sizeof(host), &port));
	ck_assert_str_eq(host, "node3");
	ck_assert_int_eq(port, 5680);
	ck_assert_ptr_null(dlq_url_host_port(c.hosts.v[2], 5673, host,
	    sizeof(host), &port));
	ck_assert_str_eq(host, "fd00::3");
	ck_assert_int_eq(port, 5681);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "rabbitmq = {\n hosts = [ \"%s\" ];"
		    " };\n", bad[i][0]);
		ck_assert_int_eq(load_next(text), -1);
		ck_assert_msg(strstr(err(), ":2: rabbitmq.hosts: bad value '")
		    != NULL && strstr(err(), bad[i][1]) != NULL, "%s: %s",
		    bad[i][0], err());
	}
	/* the variable: commas, blanks around them dropped */
	setenv("RABBITMQ_HOSTS", " node2 ,node3:5680", 1);
	ck_assert_int_eq(load_next("rabbitmq = { hosts = [ \"x\" ]; };\n"),
	    0);
	ck_assert_uint_eq(c.hosts.n, 2);
	ck_assert_str_eq(c.hosts.v[0], "node2");
	ck_assert_str_eq(c.hosts.v[1], "node3:5680");
	setenv("RABBITMQ_HOSTS", "node2,,node3", 1);
	ck_assert_int_eq(load_next("\n"), -1);
	ck_assert_str_eq(err(), "RABBITMQ_HOSTS: rabbitmq.hosts: bad value '': "
	    "element 2: must not be empty\n");
	setenv("RABBITMQ_HOSTS", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", 1);
	ck_assert_int_eq(load_next("\n"), -1);
	ck_assert_msg(strstr(err(), "rabbitmq.hosts: at most 16 nodes, not "
	    "17\n") != NULL, "%s", err());
	/* a node written as a URL: refused as one, its password not shown */
	setenv("RABBITMQ_HOSTS", "node2,amqp://u:s3cr3t@node3:5672/", 1);
	ck_assert_int_eq(load_next("\n"), -1);
	ck_assert_str_eq(err(), "RABBITMQ_HOSTS: rabbitmq.hosts: bad value "
	    "'amqp://u:***@node3:5672/': element 2: expected HOST, HOST:PORT or "
	    "[IPv6]:PORT (a host name or address, no user or path: they come "
	    "from rabbitmq.url)\n");
	setenv("RABBITMQ_HOSTS", "u:s3cr3t@node3", 1);
	ck_assert_int_eq(load_next("\n"), -1);
	ck_assert_msg(strstr(err(), "bad value '***': element 1: expected HOST")
	    != NULL, "%s", err());
}
END_TEST

/* A client certificate without its key (or the other way round) is a
 * mistake said at start; both files must be readable. */
START_TEST(a_client_certificate_needs_its_key)
{
	write_conf("rabbitmq = { tls_cert = \"/etc/hostname\"; };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_msg(strstr(err(), "rabbitmq.tls_cert and rabbitmq.tls_key "
	    "go together") != NULL, "%s", err());
	ck_assert_int_eq(load_next("rabbitmq = {\n tls_cert = \"/etc/hostname\";"
	    "\n tls_key = \"/nonexistent.key\"; };\n"), -1);
	ck_assert_msg(strstr(err(), ":3: rabbitmq.tls_key: cannot read "
	    "'/nonexistent.key': No such file or directory") != NULL, "%s",
	    err());
	ck_assert_int_eq(load_next("rabbitmq = { tls_cert = \"/etc/hostname\"; "
	    "tls_key = \"/etc/hostname\"; };\n"), 0);
	ck_assert_str_eq(c.tls_key, "/etc/hostname");
	ck_assert_str_eq(c.auth, "plain");
}
END_TEST

/* auth = "external" logs in with the client certificate: it needs one,
 * over amqps://. */
START_TEST(external_auth_needs_a_client_certificate_over_tls)
{
	write_conf("rabbitmq = { auth = \"extrenal\"; };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_ptr_nonnull(strstr(err(), "rabbitmq.auth: bad value "
	    "'extrenal': expected plain"));
	ck_assert_int_eq(load_next("rabbitmq = { url = \"amqp://localhost/\"; "
	    "auth = \"external\"; tls_cert = \"/etc/hostname\"; tls_key = "
	    "\"/etc/hostname\"; };\n"), -1);
	ck_assert_ptr_nonnull(strstr(err(), "rabbitmq.auth = \"external\" "
	    "needs an amqps:// URL and rabbitmq.tls_cert"));
	ck_assert_int_eq(load_next("rabbitmq = { url = \"amqps://localhost/\"; "
	    "auth = \"external\"; tls_cert = \"/etc/hostname\"; tls_key = "
	    "\"/etc/hostname\"; };\n"), 0);
}
END_TEST

START_TEST(classification_rules_are_checked)
{
	char want[160];

	write_conf("classify = { rules = (\n"
	    "  { match = \"fraud\"; class = \"manual\"; },\n"
	    "  { match = \"(\"; class = \"transient\"; },\n"
	    "  { reason = \"expired\"; class = \"later\"; },\n"
	    "  { class = \"unknown\"; hint = \"x\"; }\n); };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	snprintf(want, sizeof(want), "%s:3: classify.rules: bad regular "
	    "expression", path);
	ck_assert_msg(strstr(err(), want) != NULL, "%s", err());
	snprintf(want, sizeof(want), "%s:4: classify.rules: class must be", path);
	ck_assert_msg(strstr(err(), want) != NULL, "%s", err());
	snprintf(want, sizeof(want), "%s:5: classify.rules: a rule needs match, "
	    "reason or queue", path);
	ck_assert_msg(strstr(err(), want) != NULL, "%s", err());
	ck_assert_ptr_null(strstr(err(), ":2:"));
}
END_TEST

START_TEST(url_mask_hides_only_the_password)
{
	char *m;

	m = dlq_url_mask("amqp://user:pa:ss@host:5672/v");
	ck_assert_str_eq(m, "amqp://user:***@host:5672/v");
	free(m);
	m = dlq_url_mask("amqp://host/");
	ck_assert_str_eq(m, "amqp://host/");
	free(m);
}
END_TEST

/* A management URL with its own user is a secret; an '@' after the host
 * (in a path or query) is not a user. */
START_TEST(userinfo_is_found_before_the_host_only)
{
	ck_assert(dlq_url_has_userinfo("http://mon:s3cret@mq:15672/"));
	ck_assert(dlq_url_has_userinfo("https://mon@mq/"));
	ck_assert(!dlq_url_has_userinfo("http://mq:15672/"));
	ck_assert(!dlq_url_has_userinfo("http://mq:15672/a@b?c=d@e"));
}
END_TEST

START_TEST(redrive_is_off_by_default_and_read_with_its_ratio)
{
	struct dlq_replay_policy p;

	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	ck_assert_uint_eq(c.redrive_queues.n, 0);
	ck_assert(dlq_strlist_contains(&c.redrive_classes, "transient"));
	ck_assert_int_eq(c.redrive_trip_permille, 500);
	ck_assert_int_eq(c.owner_sla_ms, 4 * 3600000);
	dlq_config_release(&c);
	write_conf("redrive = { queues = [ \"sms_send\" ]; classes = "
	    "[ \"transient\" ]; trip_ratio = 0.25; max_cycles = 4; };\n"
	    "replay = { evidence_max_age_ms = 600000; queues = ( { queue = "
	    "\"payments\"; evidence_max_age_ms = 60000; } ); };\n"
	    "cases = { owner_sla_ms = 0; };\n");
	ck_assert_msg(dlq_config_load(&c, path, &errors) == 0, "%s", err());
	ck_assert_str_eq(c.redrive_queues.v[0], "sms_send");
	ck_assert_int_eq(c.redrive_trip_permille, 250);
	ck_assert_int_eq(c.redrive_max_cycles, 4);
	ck_assert_int_eq(c.owner_sla_ms, 0);
	dlq_config_replay_policy(&c, "payments", &p);
	ck_assert_int_eq(p.evidence_max_age_ms, 60000);
	dlq_config_replay_policy(&c, "orders", &p);
	ck_assert_int_eq(p.evidence_max_age_ms, 600000);
	/* the queues named, and where, for the check against the topology */
	ck_assert_uint_eq(c.n_queue_refs, 2);
	ck_assert_str_eq(c.queue_refs[0].key, "replay.queues");
	ck_assert_str_eq(c.queue_refs[0].name, "payments");
	ck_assert_ptr_nonnull(strstr(c.queue_refs[0].where, ":2"));
	ck_assert_str_eq(c.queue_refs[1].key, "redrive.queues");
	ck_assert_str_eq(c.queue_refs[1].name, "sms_send");
	ck_assert_ptr_nonnull(strstr(c.queue_refs[1].where, ":1"));
}
END_TEST

/* A queue's own replay policy overrides the global one field by field:
 * its never list and require_owner too. A require_owner that is no
 * boolean (1, "yes") would leave the rule off without a word: refused,
 * as is an unknown class, by its line, element and value. */
START_TEST(a_queue_policy_sets_never_and_require_owner_or_says_why_not)
{
	struct dlq_replay_policy p;
	char want[1000];

	write_conf("replay = { queues = ( { queue = \"payments\";\n"
	    "  never = [ \"validation\", \"transient\" ];\n"
	    "  require_owner = true; } ); };\n");
	ck_assert_msg(dlq_config_load(&c, path, &errors) == 0, "%s", err());
	dlq_config_replay_policy(&c, "payments", &p);
	ck_assert_int_eq(p.require_owner, 1);
	ck_assert(dlq_strlist_contains(&p.never, "transient"));
	ck_assert(!dlq_strlist_contains(&p.never, "security"));
	dlq_config_replay_policy(&c, "orders", &p);
	ck_assert_int_eq(p.require_owner, 0);
	ck_assert(dlq_strlist_contains(&p.never, "security"));
	ck_assert(!dlq_strlist_contains(&p.never, "transient"));
	dlq_config_release(&c);

	write_conf("replay = { queues = (\n"
	    "  { queue = \"payments\"; require_owner = 1; },\n"
	    "  { queue = \"orders\"; never = [ \"validation\",\n"
	    "      \"expierd\" ]; },\n"
	    "  { queue = \"sms\"; never = \"security\"; },\n"
	    "  { queue = \"push\"; never = [ 3 ]; } ); };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	snprintf(want, sizeof(want),
	    "%s:2: replay.queues: require_owner must be true or false\n"
	    "%s:4: replay.queues: never: bad value 'expierd': element 2: "
	    "unknown class (known: transient, rate_limited, validation, "
	    "configuration, contract, security, expired, manual, unknown)\n"
	    "%s:5: replay.queues: never must be a list of classes [ \"...\" ]\n"
	    "%s:6: replay.queues: never: element 1: not a string (\"...\")\n",
	    path, path, path, path);
	ck_assert_str_eq(err(), want);
}
END_TEST

/* A rule's or a target's text given as a number or a boolean (hint = 3,
 * format = 2) is refused by its line, not taken as left out. */
START_TEST(a_text_setting_of_another_type_is_refused)
{
	char want[600];

	write_conf("alert = { targets = ( { url = \"https://chat.example/h\";\n"
	    "  format = 2; } ); };\n"
	    "classify = { rules = ( { match = \"x\"; class = \"transient\";\n"
	    "  hint = 3;\n  link = true; }, { match = 1; class = "
	    "\"transient\"; } ); };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	snprintf(want, sizeof(want),
	    "%s:2: alert.targets: format must be a string (\"...\")\n"
	    "%s:4: classify.rules: hint must be a string (\"...\")\n"
	    "%s:5: classify.rules: link must be a string (\"...\")\n"
	    "%s:5: classify.rules: match must be a string (\"...\")\n",
	    path, path, path, path);
	ck_assert_str_eq(err(), want);
}
END_TEST

START_TEST(bad_redrive_settings_are_refused)
{
	write_conf("redrive = { trip_ratio = 1.5; classes = [ \"transeint\" ];"
	    " max_cycles = 0; };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_ptr_nonnull(strstr(err(), ":1: redrive.trip_ratio: bad "
	    "value '1.5': must be 0.0 .. 1.0"));
	ck_assert_ptr_nonnull(strstr(err(), ":1: redrive.classes: bad value "
	    "'transeint': element 1: unknown class (known: transient,"));
	ck_assert_ptr_nonnull(strstr(err(), "redrive.max_cycles: bad value "
	    "'0'"));
	dlq_config_release(&c);
	dlq_buf_reset(&errors);
	unlink(path);
	write_conf("redrive = { trip_ratio = \"half\"; };\n");
	ck_assert_int_eq(dlq_config_load(&c, path, &errors), -1);
	ck_assert_ptr_nonnull(strstr(err(), "redrive.trip_ratio: must be a "
	    "number, not a string"));
}
END_TEST

/* Whether the example file sets `key` (or shows it commented out) in
 * its `section = { ... };` block. */
static bool
example_has(const char *example, const char *section, const char *key)
{
	char open[64];
	const char *at, *end, *line;
	size_t n = strlen(key);

	snprintf(open, sizeof(open), "\n%s = {", section);
	if ((at = strstr(example, open)) == NULL ||
	    (end = strstr(at, "\n};")) == NULL)
		return false;
	for (line = strchr(at + 1, '\n'); line != NULL && line < end;
	    line = strchr(line + 1, '\n')) {
		line += strspn(line, "\n #");
		if (strncmp(line, key, n) == 0 &&
		    line[n + strspn(line + n, " ")] == '=')
			return true;
	}
	return false;
}

/* The settings dlq-worker.conf(5) documents: each ".TP" / ".TQ" entry
 * of its SETTINGS section whose tag is ".B section.key". Calls `each`
 * with the name; returns how many. */
static int
man_settings(const char *man, void (*each)(const char *, void *), void *arg)
{
	const char *at = strstr(man, "\n.SH SETTINGS\n"), *end, *p;
	char name[96];
	int n = 0;

	ck_assert_msg(at != NULL, "man/dlq-worker.conf.5 has no SETTINGS");
	if ((end = strstr(at + 1, "\n.SH ")) == NULL)
		end = at + strlen(at);
	for (p = at; (p = strstr(p + 1, "\n.B ")) != NULL && p < end; ) {
		if (strncmp(p - 3, ".TP", 3) != 0 && strncmp(p - 3, ".TQ", 3) != 0)
			continue;
		if (sscanf(p + 4, "%95[a-z_.]", name) == 1 &&
		    strchr(name, '.') != NULL) {
			each(name, arg);
			n++;
		}
	}
	return n;
}

static void
shown_in_example(const char *name, void *example)
{
	char section[32];
	const char *key = strchr(name, '.') + 1;

	snprintf(section, sizeof(section), "%.*s", (int)(key - name - 1),
	    name);
	ck_assert_msg(example_has(example, section, key),
	    "config/dlq-worker.conf does not show %s", name);
}

/* Every setting dlq-worker.conf(5) documents is shown in the example
 * configuration, in its section, so the file a user copies is complete;
 * and the example is a valid configuration. */
START_TEST(the_example_file_shows_every_setting_of_the_man_page)
{
	char *man = check_slurp("man/dlq-worker.conf.5");
	char *example = check_slurp("config/dlq-worker.conf");

	ck_assert_int_ge(man_settings(man, shown_in_example, example), 50);
	ck_assert_int_eq(dlq_config_load(&c, "config/dlq-worker.conf",
	    &errors), 0);
	free(man);
	free(example);
}
END_TEST

/* The other way round: every setting the worker reads, and its
 * variable, is in dlq-worker.conf(5) and in the example file. */
START_TEST(every_setting_is_documented_and_in_the_example)
{
	char *man = check_slurp("man/dlq-worker.conf.5");
	char *example = check_slurp("config/dlq-worker.conf");
	char name[96], want[128], section[32];
	const char *env, *key;
	size_t i;

	for (i = 0; dlq_config_setting(i, name, sizeof(name), &env) != NULL;
	    i++) {
		snprintf(want, sizeof(want), "\n.B %s\n", name);
		ck_assert_msg(strstr(man, want) != NULL,
		    "man/dlq-worker.conf.5 has no entry for %s", name);
		if (env != NULL) {
			snprintf(want, sizeof(want), "\\fB%s\\fR", env);
			ck_assert_msg(strstr(man, want) != NULL,
			    "man/dlq-worker.conf.5 does not name %s", env);
		}
		key = strchr(name, '.') + 1;
		snprintf(section, sizeof(section), "%.*s",
		    (int)(key - name - 1), name);
		ck_assert_msg(example_has(example, section, key),
		    "config/dlq-worker.conf does not show %s", name);
	}
	ck_assert_int_ge(i, 50);
	free(man);
	free(example);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("load");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, defaults_match_the_source_system);
	tcase_add_test(tc, every_setting_is_documented_and_in_the_example);
	tcase_add_test(tc, env_overrides_file);
	tcase_add_test(tc, syntax_error_names_file_and_line);
	tcase_add_test(tc, a_byte_order_mark_is_not_part_of_the_file);
	tcase_add_test(tc, missing_file_is_an_error);
	tcase_add_test(tc, a_directory_is_not_a_config_file);
	tcase_add_test(tc, out_of_range_numbers_are_refused_not_wrapped);
	tcase_add_test(tc, negative_cooldown_from_env_is_refused);
	tcase_add_test(tc, env_numbers_are_digits_only);
	tcase_add_test(tc, bad_urls_are_refused_without_the_password);
	tcase_add_test(tc, a_bad_url_says_what_is_wrong_without_the_password);
	tcase_add_test(tc, archive_url_takes_libpq_forms_and_is_never_echoed);
	tcase_add_test(tc, webhook_must_be_http_and_is_never_echoed);
	tcase_add_test(tc, a_webhook_url_curl_cannot_use_is_refused_at_load);
	tcase_add_test(tc, the_format_follows_the_webhook_host);
	tcase_add_test(tc, every_problem_is_reported_at_once);
	tcase_add_test(tc, an_unknown_setting_names_the_one_meant);
	tcase_add_test(tc, control_characters_in_paths_are_refused_and_shown_escaped);
	tcase_add_test(tc, a_dlq_suffix_with_a_control_character_is_refused);
	tcase_add_test(tc, topology_path_is_relative_to_the_config_file);
	tcase_add_test(tc,
	    the_tls_ca_file_is_relative_to_the_config_file_and_readable);
	tcase_add_test(tc, a_webhook_ca_file_goes_with_its_target);
	tcase_add_test(tc, a_variable_can_come_from_a_file);
	tcase_add_test(tc, other_nodes_are_host_and_port);
	tcase_add_test(tc, a_client_certificate_needs_its_key);
	tcase_add_test(tc, external_auth_needs_a_client_certificate_over_tls);
	tcase_add_test(tc, classification_rules_are_checked);
	tcase_add_test(tc, url_mask_hides_only_the_password);
	tcase_add_test(tc, userinfo_is_found_before_the_host_only);
	tcase_add_test(tc, redrive_is_off_by_default_and_read_with_its_ratio);
	tcase_add_test(tc, bad_redrive_settings_are_refused);
	tcase_add_test(tc,
	    a_queue_policy_sets_never_and_require_owner_or_says_why_not);
	tcase_add_test(tc, a_text_setting_of_another_type_is_refused);
	tcase_add_test(tc, control_socket_path_must_fit_a_unix_socket);
	tcase_add_test(tc, settings_the_worker_needs_cannot_be_empty);
	tcase_add_test(tc, list_elements_are_checked_on_their_line);
	tcase_add_test(tc, numbers_too_large_for_32_bits_are_refused_not_wrapped);
	tcase_add_test(tc, http_listen_must_be_an_address_the_server_can_bind);
	tcase_add_test(tc, the_same_webhook_twice_is_refused);
	tcase_add_test(tc, the_example_file_shows_every_setting_of_the_man_page);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
