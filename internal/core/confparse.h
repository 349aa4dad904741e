/* confparse.h - helpers of the configuration's readers (config.c,
 * conflists.c). */
#ifndef DLQ_CONFPARSE_H
#define DLQ_CONFPARSE_H

#include <libconfig.h>
#include <stddef.h>

#include "buf.h"
#include "settings.h"

/* "FILE:LINE" of setting `s` (`path` when libconfig knows no file). */
void	dlq_conf_where(const config_setting_t *s, const char *path, char *out,
	    size_t n);
/* A relative file name is taken relative to the config file at
 * `cfgpath`: *p replaced by the joined path. */
void	dlq_conf_resolve_relative(char **p, const char *cfgpath);
/* 0 when `file` can be read; else -1 and "WHERE: KEY: cannot read ..."
 * in `errors`. */
int	dlq_conf_check_readable(const char *key, const char *file,
	    const char *where, struct dlq_buf *errors);
/* Each setting of list entry `e` is one of `members` (NULL-ended);
 * -1, with an unknown one named (and the one meant) in `errors`. */
int	dlq_conf_check_members(const config_setting_t *e, const char *list,
	    const char *const *members, const char *where,
	    struct dlq_buf *errors);
/* `l` becomes a copy of the NULL-ended `v`. */
void	dlq_conf_list_set(struct dlq_strlist *l, const char *const *v);

#endif
