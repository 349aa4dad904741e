/* cli.c - start-up steps shared by the two programs. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "suggest.h"
#include "termtext.h"

/* The work queues the configuration names (a replay policy, redrive)
 * must be the topology's: a misspelt one would leave its policy unused,
 * and an expired OTP replayable. Returns how many are not. */
static int
unknown_queues(const struct dlq_config *c, const struct dlq_topology *t,
    struct dlq_buf *errors)
{
	const struct dlq_queue_ref *r;
	const char *near;
	int n = 0;

	for (r = c->queue_refs; r < c->queue_refs + c->n_queue_refs; r++) {
		if (dlq_topology_find(t, r->name) != NULL)
			continue;
		dlq_buf_printf(errors, "%s: %s: bad value '", r->where, r->key);
		dlq_term_add(errors, r->name);
		dlq_buf_printf(errors, "': not a work queue of the topology "
		    "(%s)", c->topology_file ? c->topology_file :
		    "the built-in line topology");
		if ((near = dlq_topology_suggest(t, r->name)) != NULL)
			dlq_buf_printf(errors, "; did you mean '%s'?", near);
		dlq_buf_adds(errors, "\n");
		n++;
	}
	return n;
}

int
dlq_cli_load(const char *path, struct dlq_config *c, struct dlq_topology **t)
{
	struct dlq_buf errors;

	dlq_buf_init(&errors);
	*t = NULL;
	if (dlq_config_load(c, path, &errors) == 0)
		*t = dlq_topology_load(c->topology_file, c->dlq_suffix, &errors);
	if (*t != NULL && unknown_queues(c, *t, &errors) > 0) {
		dlq_topology_free(*t);
		*t = NULL;
	}
	if (*t == NULL) {
		fputs(errors.data ? errors.data : "cannot load configuration\n",
		    stderr);
		dlq_buf_release(&errors);
		dlq_config_release(c);
		return -1;
	}
	dlq_buf_release(&errors);
	dlq_log_set_level(c->log_level);
	return 0;
}

void
dlq_cli_bad_option(const char *prog, char *const *argv,
    const struct option *longopts)
{
	struct dlq_suggestion s = DLQ_SUGGESTION_NONE;
	const struct option *o;
	const char *arg = argv[optind - 1], *name = arg + 2;
	char typed[64];
	size_t len = strcspn(name, "=");

	if (strncmp(arg, "--", 2) != 0) {	/* -x, or -c without FILE */
		for (o = longopts; o->name != NULL && (o->val != optopt ||
		    o->has_arg != required_argument); o++)
			;
		if (o->name != NULL && arg[1] == optopt)
			fprintf(stderr, "%s: -%c needs a value\n", prog, optopt);
		else
			fprintf(stderr, "%s: unknown option '-%c'\n", prog,
			    optopt);
		return;
	}
	/* options are taken by their whole name only (dlq_cli_getopt) */
	for (o = longopts; o->name != NULL; o++)
		if (strncmp(o->name, name, len) == 0 && o->name[len] == '\0')
			break;
	if (o->name != NULL) {
		fprintf(stderr, "%s: --%s %s\n", prog, o->name,
		    name[len] == '=' ? "takes no value" : "needs a value");
		return;
	}
	fprintf(stderr, "%s: unknown option '--%.*s'", prog, (int)len, name);
	snprintf(typed, sizeof(typed), "%.*s", (int)len, name);
	for (o = longopts; o->name != NULL; o++)
		dlq_suggest_consider(&s, typed, o->name, strlen(o->name));
	if (s.word != NULL)
		fprintf(stderr, "; did you mean '--%s'?", s.word);
	fputc('\n', stderr);
}

int
dlq_cli_getopt(int argc, char *const *argv, const char *shortopts,
    const struct option *longopts, const char *who)
{
	const struct option *o;
	const char *arg, *typed;
	int ch, idx = -1;
	size_t len;

	ch = getopt_long(argc, argv, shortopts, longopts, &idx);
	if (ch == -1 || ch == '?' || ch == ':' || idx < 0)
		return ch;
	o = &longopts[idx];
	/* the word it came from: its value, when separate, is the last */
	arg = argv[optind - 1];
	if (o->has_arg != no_argument && optarg != NULL && optarg == arg &&
	    optind >= 2)
		arg = argv[optind - 2];
	if (strncmp(arg, "--", 2) != 0)
		return ch;
	typed = arg + 2;
	len = strcspn(typed, "=");
	if (len == strlen(o->name))
		return ch;
	fprintf(stderr, "%s: unknown option '--%.*s'; did you mean '--%s'?\n",
	    who, (int)len, typed, o->name);
	return DLQ_CLI_ABBREVIATED;
}
