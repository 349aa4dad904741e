/* ctlargs.c - dlqctl's command words: a command's options into its
 * request (each checked: a duration, a count in range, a text that is
 * not blank, given once), archive ids, and what a command line misses or
 * has too much of. Every problem is said on stderr as "dlqctl: ...". */
#include "ctlargs.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "cli.h"
#include "ctlclient.h"
#include "ctlselect.h"
#include "signature.h"
#include "suggest.h"

/* Every option a command may take, and the request key it fills. */
/* K_NAME: an exchange or routing key, where "" means something (the
 * default exchange; no key); blanks only are still a mistake. K_SIG,
 * K_STATUS, K_CLASS: a failure signature, a case status, an error class,
 * sent in lowercase as dlqctl prints them and checked here, so a slip is
 * said even while the worker does not answer. */
enum kind { K_STR, K_NAME, K_SIG, K_STATUS, K_CLASS, K_DUR, K_COUNT,
	K_RATE, K_FLAG, K_ID };

static const struct opt {
	const char	*name;
	const char	*key;
	enum kind	 kind;
} opt_table[] = {
	{ "queue",	"queue",	K_STR },
	{ "status",	"status",	K_STATUS },
	{ "class",	"class",	K_CLASS },
	{ "signature",	"signature",	K_SIG },
	{ "message-id",	"message_id",	K_STR },
	{ "correlation-id", "correlation_id", K_STR },
	{ "since",	"since_ms",	K_DUR },
	{ "limit",	"limit",	K_COUNT },
	{ "before",	"before_id",	K_ID },
	{ "payload",	"payload",	K_FLAG },
	{ "by-cause",	"by_cause",	K_FLAG },
	{ "owner",	"owner",	K_STR },
	{ "decision",	"decision",	K_STR },
	{ "escalate-in", "escalate_in_ms", K_DUR },
	{ "evidence",	"evidence",	K_STR },
	{ "reason",	"reason",	K_STR },
	{ "yes",	"yes",		K_FLAG },
	{ "older-than",	"older_than_ms", K_DUR },
	{ "rate",	"rate",		K_RATE },
	{ "to-exchange", "to_exchange",	K_NAME },
	{ "routing-key", "routing_key",	K_NAME },
	{ "reset-retries", "reset_retries", K_FLAG },
	{ "execute",	"execute",	K_FLAG },
	{ "force",	"force",	K_FLAG },
	{ "from-queue",	"from_queue",	K_STR },
	{ "count",	"count",	K_COUNT },
	{ "error",	"error",	K_STR },
	{ "retries",	"retries",	K_RATE },
	{ "canary",	"canary",	K_COUNT },
	{ "watch",	"watch_ms",	K_DUR },
	{ "actor",	"actor",	K_STR },
	{ "command",	"command",	K_STR },
};

#define NOPTS	(sizeof(opt_table) / sizeof(opt_table[0]))

/* The largest value a count or rate option takes, and in *why what
 * makes it smaller than the usual 100000 when that needs saying. */
static long long
count_max(const struct opt *o, const char **why)
{
	*why = "";
	/* what the worker answers at most in one list, groups, replay
	 * plan or selection */
	if (strcmp(o->key, "limit") == 0)
		return DLQ_SELECT_MAX;
	if (strcmp(o->key, "canary") == 0) {
		*why = " (a canary is a small first batch)";
		return 1000;
	}
	return 100000;
}

/* `s` as an archive id: a whole number from 1 to DLQ_JSON_INT_MAX. */
static bool
archive_id(const char *s, long long *v)
{
	char *end;

	errno = 0;
	*v = strtoll(s, &end, 10);
	return *s != '\0' && *end == '\0' && errno != ERANGE && *v >= 1 &&
	    *v <= DLQ_JSON_INT_MAX;
}

/* Whether `name` is a word of the space-separated `list`. */
static bool
named(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = list; (p = strstr(p, name)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	return false;
}

/* Says an option of `cmd` is not known, with the one of `allowed` (space
 * separated) nearest to it: --exectue, did you mean --execute. */
static void
unknown_option(const char *cmd, const char *arg, const char *allowed)
{
	struct dlq_suggestion s = DLQ_SUGGESTION_NONE;
	char typed[64];
	const char *name = arg + strspn(arg, "-"), *p;
	size_t len;

	snprintf(typed, sizeof(typed), "%.*s", (int)strcspn(name, "="), name);
	fprintf(stderr, "dlqctl: %s: unknown option '--%s'", cmd, typed);
	for (p = allowed; *p != '\0'; p += len + (p[len] == ' ')) {
		len = strcspn(p, " ");
		dlq_suggest_consider(&s, typed, p, len);
	}
	if (s.word != NULL)
		fprintf(stderr, "; did you mean '--%.*s'?", (int)s.len, s.word);
	fputc('\n', stderr);
}

/* Whether the word `arg` ("--name" or "--name=value") names `name`
 * whole, not a prefix of it. */
static bool
whole_name(const char *arg, const char *name)
{
	size_t len = strcspn(arg + 2, "=");

	return strncmp(arg, "--", 2) == 0 && strlen(name) == len &&
	    strncmp(arg + 2, name, len) == 0;
}

/* Whether the value of a K_SIG, K_STATUS or K_CLASS option is one the
 * worker knows; if not, says so with the known word nearest to it
 * (--status opne: did you mean 'open'?). */
static bool
known_value(const struct opt *o, const char *v)
{
	const char *const *words = o->kind == K_STATUS ? dlq_status_names :
	    dlq_class_names;
	const char *near;

	if (o->kind == K_SIG) {
		if (dlq_signature_id_valid(v))
			return true;
		fprintf(stderr, "dlqctl: --%s: " DLQ_SIGNATURE_BAD "\n",
		    o->name, v);
		return false;
	}
	if (o->kind == K_STATUS ? dlq_status_valid(v) : dlq_class_valid(v))
		return true;
	fprintf(stderr, "dlqctl: --%s: unknown %s '%s' (%s)", o->name,
	    o->name, v, o->kind == K_STATUS ? DLQ_STATUS_LIST :
	    DLQ_CLASS_LIST);
	if ((near = dlq_suggest(v, words)) != NULL)
		fprintf(stderr, "; did you mean '%s'?", near);
	fputc('\n', stderr);
	return false;
}

/* Parses the command's options into `r`, accepting only the names in
 * `allowed` (space separated). Returns false on any usage error. */
bool
dlq_args_options(cJSON *r, int argc, char **argv, const char *allowed)
{
	struct option longopts[NOPTS + 1];
	const struct opt *o;
	const char *why;
	char *end, *c, who[64];
	long long v, max;
	int64_t ms;
	size_t i;
	int ch;

	for (i = 0; i < NOPTS; i++) {
		longopts[i].name = opt_table[i].name;
		longopts[i].has_arg = opt_table[i].kind == K_FLAG ? no_argument :
		    required_argument;
		longopts[i].flag = NULL;
		longopts[i].val = 256 + (int)i;
	}
	memset(&longopts[NOPTS], 0, sizeof(longopts[NOPTS]));
	optind = 0;	/* 0: glibc starts afresh (permuting) */
	opterr = 0;	/* its messages name the command alone: ours below */
	snprintf(who, sizeof(who), "dlqctl: %.40s", argv[0]);
	while ((ch = dlq_cli_getopt(argc, argv, "", longopts, who)) != -1) {
		if (ch == DLQ_CLI_ABBREVIATED)
			return false;
		if (ch < 256) {
			if (optopt >= 256 && whole_name(argv[optind - 1],
			    opt_table[optopt - 256].name))
				fprintf(stderr, "dlqctl: --%s %s\n",
				    opt_table[optopt - 256].name,
				    opt_table[optopt - 256].kind == K_FLAG ?
				    "takes no value" : "needs a value");
			else if (optopt > 0 && optopt < 256)
				fprintf(stderr, "dlqctl: %s: unknown option "
				    "'-%c'\n", argv[0], optopt);
			else
				unknown_option(argv[0], argv[optind - 1],
				    allowed);
			return false;
		}
		o = &opt_table[ch - 256];
		if (!named(allowed, o->name)) {
			fprintf(stderr, "dlqctl: %s does not take --%s\n", argv[0],
			    o->name);
			return false;
		}
		if (cJSON_HasObjectItem(r, o->key)) {
			fprintf(stderr, "dlqctl: --%s given twice\n", o->name);
			return false;
		}
		switch (o->kind) {
		case K_STR:
		case K_NAME:
		case K_SIG:
		case K_STATUS:
		case K_CLASS:
			if (optarg[strspn(optarg, " \t\r\n")] == '\0' &&
			    (o->kind != K_NAME || optarg[0] != '\0')) {
				fprintf(stderr, "dlqctl: --%s: empty\n", o->name);
				return false;
			}
			if (strlen(optarg) > DLQ_CONTROL_TEXT_MAX) {
				fprintf(stderr, "dlqctl: --%s: too long: %zu "
				    "bytes, at most %d\n", o->name, strlen(optarg),
				    DLQ_CONTROL_TEXT_MAX);
				return false;
			}
			if (o->kind == K_SIG || o->kind == K_STATUS ||
			    o->kind == K_CLASS) {	/* however it was typed */
				for (c = optarg; *c != '\0'; c++)
					*c = (char)tolower((unsigned char)*c);
				if (!known_value(o, optarg))
					return false;
			}
			cJSON_AddStringToObject(r, o->key, optarg);
			break;
		case K_FLAG:
			cJSON_AddTrueToObject(r, o->key);
			break;
		case K_DUR:
			/* a zero --since would select nothing, or
			 * everything: neither is what was meant */
			if ((ms = dlq_parse_duration(optarg)) == 0) {
				fprintf(stderr, "dlqctl: --%s: must be more than "
				    "0, not '%s'\n", o->name, optarg);
				return false;
			}
			if (ms == DLQ_DURATION_TOO_LONG) {
				fprintf(stderr, "dlqctl: --%s: too long: '%s' "
				    "(at most 3650d)\n", o->name, optarg);
				return false;
			}
			if (ms < 0) {
				fprintf(stderr, "dlqctl: --%s: bad duration '%s' "
				    "(a number and ms, s, m, h, d or w: 90s, 15m, "
				    "2h, 7d)\n", o->name, optarg);
				return false;
			}
			cJSON_AddNumberToObject(r, o->key, (double)ms);
			break;
		case K_COUNT:
		case K_RATE:
			max = count_max(o, &why);
			v = strtoll(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < (o->kind ==
			    K_RATE ? 0 : 1) || v > max) {
				fprintf(stderr, "dlqctl: --%s: expected %s..%lld%s, "
				    "not '%s'\n", o->name, o->kind == K_RATE ? "0" :
				    "1", max, why, optarg);
				return false;
			}
			cJSON_AddNumberToObject(r, o->key, (double)v);
			break;
		case K_ID:
			if (!archive_id(optarg, &v)) {
				fprintf(stderr, "dlqctl: --%s: '%s' is not an "
				    "archive id\n", o->name, optarg);
				return false;
			}
			cJSON_AddNumberToObject(r, o->key, (double)v);
			break;
		}
	}
	return true;
}

/* True when `r` holds every option named in `names` (space separated);
 * else says which one the command needs. */
bool
dlq_args_require(const cJSON *r, const char *cmd, const char *names)
{
	size_t i;

	for (i = 0; i < NOPTS; i++)
		if (named(names, opt_table[i].name) &&
		    !cJSON_HasObjectItem(r, opt_table[i].key)) {
			fprintf(stderr, "dlqctl: %s needs --%s\n", cmd,
			    opt_table[i].name);
			return false;
		}
	return true;
}

static int
cmp_id(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* The remaining arguments as archive ids, in their order, each once: an
 * id given twice is one dead letter (replayed once, dropped once); at
 * most DLQ_CONTROL_IDS_MAX of them. */
bool
dlq_args_ids(cJSON *r, int argc, char **argv)
{
	cJSON *ids = cJSON_AddArrayToObject(r, "ids");
	long long *sorted, v, *at;
	bool *given;
	size_t n = (size_t)(argc - optind), k;
	int i, distinct = 0;

	if (!dlq_args_has(optind, argc, argv, "an archive id"))
		return false;
	sorted = calloc(n, sizeof(*sorted));
	given = calloc(n, sizeof(*given));
	if (sorted == NULL || given == NULL) {
		fprintf(stderr, "dlqctl: out of memory\n");
		free(sorted);
		free(given);
		return false;
	}
	for (i = optind; i < argc; i++) {
		if (!archive_id(argv[i], &v)) {
			fprintf(stderr, "dlqctl: '%s' is not an archive id\n",
			    argv[i]);
			break;
		}
		sorted[i - optind] = v;
	}
	if (i < argc) {
		free(sorted);
		free(given);
		return false;
	}
	qsort(sorted, n, sizeof(*sorted), cmp_id);
	for (i = optind; i < argc; i++) {
		v = strtoll(argv[i], NULL, 10);
		at = bsearch(&v, sorted, n, sizeof(*sorted), cmp_id);
		for (k = (size_t)(at - sorted); k > 0 && sorted[k - 1] == v; k--)
			;			/* the first of equal ones */
		if (given[k])
			continue;
		if (distinct++ == DLQ_CONTROL_IDS_MAX) {
			fprintf(stderr, "dlqctl: at most %d archive ids in one "
			    "command; a selection (--queue, with --class, "
			    "--signature, --since) takes more\n",
			    DLQ_CONTROL_IDS_MAX);
			break;
		}
		given[k] = true;
		cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)v));
	}
	free(sorted);
	free(given);
	return i == argc;
}

/* True when the command line has an argument at argv[at], not blank
 * (a shell variable left unset); else says that the command needs
 * `what`. */
bool
dlq_args_has(int at, int argc, char **argv, const char *what)
{
	if (at < argc && argv[at][strspn(argv[at], " \t\r\n")] != '\0')
		return true;
	fprintf(stderr, "dlqctl: %s needs %s%s\n", argv[0], what, at < argc ?
	    ", not an empty argument" : "");
	return false;
}

/* True when nothing is left on the command line from argv[from]; else
 * names the first argument the command does not take. From 1, the
 * command has no options: one given (stats --since 1h) is named as
 * such; later, what getopt left is an argument, whatever it looks like
 * (after "--"). */
bool
dlq_args_done(int from, int argc, char **argv)
{
	if (from >= argc)
		return true;
	if (from == 1 && argv[from][0] == '-' && argv[from][1] != '\0')
		fprintf(stderr, "dlqctl: %s: unknown option '%s' (%s takes "
		    "none)\n", argv[0], argv[from], argv[0]);
	else
		fprintf(stderr, "dlqctl: %s: unexpected argument '%s'\n",
		    argv[0], argv[from]);
	return false;
}

const char *
dlq_args_str(cJSON *r, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(r, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Whether the word `arg` is an option of opt_table whose value is the
 * next word: in "--reason -h" the -h is the reason. Options are taken
 * by their whole name only (dlq_cli_getopt). */
static bool
value_follows(const char *arg)
{
	size_t i;

	if (strncmp(arg, "--", 2) != 0)
		return false;
	for (i = 0; i < NOPTS; i++)
		if (strcmp(opt_table[i].name, arg + 2) == 0)
			return opt_table[i].kind != K_FLAG;
	return false;
}

/* Takes --json out of a command's words and says whether --help or -h
 * is among them: only where an option stands, not as an option's value
 * nor after "--". argv[0] is the command's first word. */
bool
dlq_args_take_global(int *argc, char **argv, bool *json)
{
	bool help = false;
	int i;

	for (i = 1; i < *argc && strcmp(argv[i], "--") != 0; i++) {
		if (value_follows(argv[i])) {
			i++;
		} else if (strcmp(argv[i], "--json") == 0) {
			*json = true;
			memmove(&argv[i], &argv[i + 1],
			    (size_t)(*argc - i - 1) * sizeof(*argv));
			(*argc)--;
			i--;
		} else if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			help = true;
		}
	}
	return help;
}
