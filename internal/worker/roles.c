/* roles.c - who a control socket peer is: its user, its groups, and
 * the role control.viewers, .operators and .admins give them (root and
 * the worker's own user are admins). */
#include "roles.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The gid of group `name`: 1, 0 when the host has no such group, -1
 * when it cannot tell. A group's entry lists its members: a large one
 * does not fit the usual 4 KiB, so the buffer grows (to 1 MiB). */
static int
group_gid(const char *name, gid_t *gid)
{
	struct group gr, *res = NULL;
	size_t len = 4096;
	char *buf = NULL, *more;
	int rc;

	do {
		if ((more = realloc(buf, len)) == NULL) {
			rc = ENOMEM;
			break;
		}
		buf = more;
		rc = getgrnam_r(name, &gr, buf, len, &res);
		len *= 2;
	} while (rc == ERANGE && len <= 1024 * 1024);
	if (rc == 0 && res != NULL)
		*gid = gr.gr_gid;
	free(buf);
	if (rc == ENOENT || rc == ESRCH)	/* some NSS modules: not found */
		return 0;
	return rc != 0 ? -1 : res != NULL;
}

static bool
listed(const struct dlq_strlist *l, const char *user, const gid_t *groups,
    int ngroups)
{
	gid_t gid;
	size_t i;
	int k;

	for (i = 0; i < l->n; i++) {
		if (l->v[i][0] != '@') {
			if (strcmp(l->v[i], user) == 0)
				return true;
			continue;
		}
		if (group_gid(l->v[i] + 1, &gid) != 1)
			continue;
		for (k = 0; k < ngroups; k++)
			if (groups[k] == gid)
				return true;
	}
	return false;
}

void
dlq_roles_unknown_members(const struct dlq_config *c,
    void (*say)(const char *, const char *, const char *, void *), void *arg)
{
	const struct {
		const char		*key;
		const struct dlq_strlist *l;
	} lists[] = { { "control.viewers", &c->viewers }, { "control.operators",
	    &c->operators }, { "control.admins", &c->admins } };
	struct passwd pw, *pwr;
	char buf[4096];
	const char *name;
	gid_t gid;
	size_t i, k;
	int rc;

	/* only a definite "no such name" is said; a lookup that fails
	 * (the directory unreachable) says nothing about the name */
	for (k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
		for (i = 0; i < lists[k].l->n; i++) {
			name = lists[k].l->v[i];
			if (name[0] == '@') {
				if (group_gid(name + 1, &gid) == 0)
					say(lists[k].key, "group", name + 1, arg);
			} else if ((rc = getpwnam_r(name, &pw, buf, sizeof(buf),
			    &pwr)) == ENOENT || rc == ESRCH || (rc == 0 &&
			    pwr == NULL))
				say(lists[k].key, "user", name, arg);
		}
}

/* The groups of user `name` with primary group `gid`, all of them: a
 * user of a directory service is often in more than a hundred. Caller
 * frees; NULL when they cannot be listed. */
static gid_t *
user_groups(const char *name, gid_t gid, int *n)
{
	gid_t *g = NULL, *more;
	int room = 64;

	while (room <= 65536 &&
	    (more = realloc(g, (size_t)room * sizeof(*g))) != NULL) {
		g = more;
		*n = room;
		if (getgrouplist(name, gid, g, n) >= 0)
			return g;
		if (*n <= room)		/* failed, not for want of room */
			break;
		room = *n;
	}
	free(g);
	return NULL;
}

enum dlq_role
dlq_roles_of(const struct dlq_config *c, uid_t uid, gid_t gid, char *user,
    size_t userlen)
{
	struct passwd pw, *res;
	gid_t *groups = NULL;
	const gid_t *g;
	int ngroups = 1;
	char buf[4096];
	enum dlq_role role;

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res != NULL)
		snprintf(user, userlen, "%s", pw.pw_name);
	else
		snprintf(user, userlen, "uid:%ld", (long)uid);
	if (uid == 0 || uid == geteuid())
		return DLQ_ROLE_ADMIN;
	if (res != NULL)
		groups = user_groups(pw.pw_name, gid, &ngroups);
	if (groups == NULL)
		ngroups = 1;	/* the primary group only */
	g = groups != NULL ? groups : &gid;
	if (listed(&c->admins, user, g, ngroups))
		role = DLQ_ROLE_ADMIN;
	else if (listed(&c->operators, user, g, ngroups))
		role = DLQ_ROLE_OPERATOR;
	else if (listed(&c->viewers, user, g, ngroups))
		role = DLQ_ROLE_VIEWER;
	else
		role = DLQ_ROLE_NONE;
	free(groups);
	return role;
}
