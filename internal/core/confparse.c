/* confparse.c - what reading any part of the configuration file needs:
 * where a setting is written, file names relative to the file, files
 * that must be readable, the members of a list's entries, string lists. */
#include "confparse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suggest.h"
#include "termtext.h"

static bool
in_list(const char *const *list, const char *s)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

/* Checks the settings of one entry of a list (alert.targets,
 * classify.rules, replay.queues): an unknown one is named with the one
 * meant, or with those the entry takes. -1 when there was one. */
int
dlq_conf_check_members(const config_setting_t *e, const char *list,
    const char *const *members, const char *where, struct dlq_buf *errors)
{
	const config_setting_t *m;
	const char *name, *near, *const *k;
	unsigned j;
	int rc = 0;

	for (j = 0; (m = config_setting_get_elem(e, j)) != NULL; j++) {
		if (in_list(members, name = config_setting_name(m)))
			continue;
		dlq_buf_printf(errors, "%s: %s: unknown setting '%s' (", where,
		    list, name);
		if ((near = dlq_suggest(name, members)) != NULL)
			dlq_buf_printf(errors, "did you mean '%s'?", near);
		else
			for (k = members; *k != NULL; k++)
				dlq_buf_printf(errors, "%s%s", k == members ?
				    "" : ", ", *k);
		dlq_buf_adds(errors, ")\n");
		rc = -1;
	}
	return rc;
}

void
dlq_conf_list_set(struct dlq_strlist *l, const char *const *v)
{
	size_t n = 0, i;

	dlq_strlist_release(l);
	while (v[n] != NULL)
		n++;
	l->v = calloc(n + 1, sizeof(char *));
	if (l->v == NULL)
		return;
	for (i = 0; i < n; i++)
		l->v[i] = strdup(v[i]);
	l->n = n;
}

void
dlq_conf_where(const config_setting_t *s, const char *path, char *out, size_t n)
{
	const char *f = config_setting_source_file(s);

	snprintf(out, n, "%s:%u", f ? f : path,
	    (unsigned)config_setting_source_line(s));
}

/* A relative file name (topology, TLS files) is taken relative to the
 * config file. */
void
dlq_conf_resolve_relative(char **p, const char *cfgpath)
{
	const char *slash;
	char *r;
	size_t dirlen;

	if (*p == NULL || (*p)[0] == '/' || (slash = strrchr(cfgpath, '/')) == NULL)
		return;
	dirlen = (size_t)(slash - cfgpath);
	if ((r = malloc(dirlen + 1 + strlen(*p) + 1)) == NULL)
		return;
	memcpy(r, cfgpath, dirlen);
	r[dirlen] = '/';
	strcpy(r + dirlen + 1, *p);
	free(*p);
	*p = r;
}

/* A file a setting names (the topology, the TLS files, which are read
 * at each connection): one that cannot be read is said at the start,
 * where it is set (`where`: "file:line" or the env var). */
int
dlq_conf_check_readable(const char *key, const char *file, const char *where,
    struct dlq_buf *errors)
{
	struct stat st;
	const char *why = NULL;

	if (access(file, R_OK) != 0)
		why = strerror(errno);
	else if (stat(file, &st) == 0 && !S_ISREG(st.st_mode))
		why = "not a regular file";
	if (why == NULL)
		return 0;
	dlq_buf_printf(errors, "%s: %s: cannot read '", where, key);
	dlq_term_add(errors, file);
	dlq_buf_printf(errors, "': %s\n", why);
	return -1;
}
