/* roles.h - the role of a control socket peer. */
#ifndef DLQ_ROLES_H
#define DLQ_ROLES_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "proto.h"

/* The role of a peer (pure but for the user/group database). */
enum dlq_role dlq_roles_of(const struct dlq_config *, uid_t, gid_t,
	    char *user, size_t userlen);

/* Calls `say` for each name in control.viewers, .operators and .admins
 * that this host's user or group database does not know ("alise" for
 * "alice", "@opps"): such an entry grants nothing, and a typo locks its
 * user out. `key` is the setting, `what` "user" or "group". */
void	dlq_roles_unknown_members(const struct dlq_config *,
	    void (*say)(const char *key, const char *what, const char *name,
	    void *arg), void *arg);

#endif
