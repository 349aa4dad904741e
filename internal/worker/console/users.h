/* users.h - the console's users, from console.tokens_file.
 *
 * One user a line, `NAME ROLE SHA256-OF-TOKEN` (ROLE viewer, operator
 * or admin; `-` for the hash: a user who signs in only through the
 * trusted proxy); blank lines and lines starting with # are skipped.
 * The file holds no secret: a token is compared by its hash. The file is
 * read again when it changes (by its modification time and size), so a
 * user is added or removed without a restart; a file that no longer
 * reads keeps the users it had, and says why in the log. */
#ifndef DLQ_CONSOLE_USERS_H
#define DLQ_CONSOLE_USERS_H

#include <stdbool.h>
#include <stddef.h>

#include "proto.h"
#include "token.h"

struct dlq_console_user {
	char		 name[DLQ_USER_NAME_MAX + 1];
	enum dlq_role	 role;
};

struct dlq_users;

/* Reads `path`; NULL with `why` when it does not read (a line's
 * number and what is wrong with it). */
struct dlq_users *dlq_users_load(const char *path, char *why, size_t n);
void	dlq_users_free(struct dlq_users *);
/* Reads the file again when it changed since. */
void	dlq_users_refresh(struct dlq_users *);
size_t	dlq_users_count(const struct dlq_users *);
/* The user whose token is `token` (n bytes); false when none. */
bool	dlq_users_by_token(struct dlq_users *, const char *token, size_t n,
	    struct dlq_console_user *out);
/* The user named `name` (for the trusted proxy's header). */
bool	dlq_users_by_name(struct dlq_users *, const char *name,
	    struct dlq_console_user *out);

#endif
