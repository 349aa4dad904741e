/* dlq-worker - the RabbitMQ dead-letter monitor daemon.
 * Parses arguments, loads the configuration and hands over to worker.c. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "archive.h"
#include "cli.h"
#include "config.h"
#include "import.h"
#include "roles.h"
#include "preflight.h"
#include "signature.h"
#include "topology.h"
#include "worker.h"

/* With what it writes into an archive, so that an operator knows
 * before an upgrade whether its first start will migrate the archive or
 * give the records their signatures again (archive_migrated,
 * signatures_refreshed). */
static void
print_version(void)
{
	printf("dlq-worker %s (archive schema %d, signature version %d)\n",
	    DLQ_VERSION, DLQ_ARCHIVE_SCHEMA, DLQ_SIGNATURE_VERSION);
}

/* --check-config: a role given to nobody is worth a warning, not a
 * refusal (the user may be created after the check). */
static void
print_unknown_member(const char *key, const char *what, const char *name,
    void *arg)
{
	(void)arg;
	printf("warning: %s: no %s '%s' on this host: the entry grants "
	    "nothing\n", key, what, name);
}

/* --check-config: the warnings each start logs, as lines of text. */
static void
print_warning(const struct dlq_warning *w, void *arg)
{
	(void)arg;
	printf("warning: %s: ", w->event);
	if (w->path != NULL)
		printf("%s (%s): ", w->path, w->mode ? w->mode : "");
	if (w->missing != NULL)
		printf("leaves out %s: ", w->missing);
	if (w->host != NULL)
		printf("%s: ", w->host);
	printf("%s\n", w->advice);
}

/* --check-config: the archive's backend, and for PostgreSQL the server
 * and the schema it found (connecting, changing nothing). */
static int
check_archive(const struct dlq_config *c)
{
	struct dlq_buf what;
	int rc;

	dlq_buf_init(&what);
	rc = dlq_archive_describe(c, &what);
	if (rc == 0) {
		if (what.len > 0)
			printf("archive: %s\n", what.data);
		puts("configuration OK");
	} else
		fprintf(stderr, "dlq-worker: archive: %s\n", what.data ?
		    what.data : "out of memory");
	dlq_buf_release(&what);
	return rc == 0 ? DLQ_EXIT_OK : DLQ_EXIT_ERROR;
}

static void
usage(FILE *f)
{
	fputs("usage: dlq-worker [-c FILE] [--check-config | --assert-only |\n"
	    "                  --import-archive SQLITE-FILE]\n"
	    "  -c, --config FILE  configuration file (default: built-in "
	    "defaults + env)\n"
	    "      --check-config validate the configuration and exit\n"
	    "      --assert-only  assert the RabbitMQ topology and exit\n"
	    "      --import-archive SQLITE-FILE\n"
	    "                     copy an SQLite archive into the PostgreSQL "
	    "archive of\n"
	    "                     archive.url, verify it, and exit\n"
	    "  -V, --version      print the version\n", f);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'n' },
		{ "assert-only", no_argument, NULL, 'a' },
		{ "import-archive", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *import = NULL;
	bool check = false, assert_only = false;
	struct dlq_config cfg;
	struct dlq_topology *top;
	int ch, rc;

	opterr = 0;	/* its messages: ours, with the option meant */
	while ((ch = dlq_cli_getopt(argc, argv, "c:hV", longopts,
	    "dlq-worker")) != -1) {
		switch (ch) {
		case 'c': path = optarg; break;
		case 'n': check = true; break;
		case 'a': assert_only = true; break;
		case 'i': import = optarg; break;
		case 'h': usage(stdout); return DLQ_EXIT_OK;
		case 'V': print_version(); return DLQ_EXIT_OK;
		case DLQ_CLI_ABBREVIATED:
			usage(stderr);
			return DLQ_EXIT_USAGE;
		default:
			dlq_cli_bad_option("dlq-worker", argv, longopts);
			usage(stderr);
			return DLQ_EXIT_USAGE;
		}
	}
	if (optind != argc || check + assert_only + (import != NULL) > 1) {
		if (optind != argc)
			fprintf(stderr, "dlq-worker: unexpected argument '%s'\n",
			    argv[optind]);
		else
			fputs("dlq-worker: --check-config, --assert-only and "
			    "--import-archive exclude each other\n", stderr);
		usage(stderr);
		return DLQ_EXIT_USAGE;
	}
	if (dlq_cli_load(path, &cfg, &top) == -1)
		return DLQ_EXIT_ERROR;
	if (check) {
		dlq_roles_unknown_members(&cfg, print_unknown_member, NULL);
		(void)dlq_preflight(&cfg, print_warning, NULL);
		rc = check_archive(&cfg);
	} else if (import != NULL)
		rc = dlq_archive_import(&cfg, import);
	else
		rc = dlq_worker_run(&cfg, top, assert_only);
	dlq_topology_free(top);
	dlq_config_release(&cfg);
	return rc;
}
