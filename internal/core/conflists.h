/* conflists.h - alert.targets, classify.rules and replay.queues, read
 * from the configuration file (config.c calls these). */
#ifndef DLQ_CONFLISTS_H
#define DLQ_CONFLISTS_H

#include <libconfig.h>
#include <stddef.h>

#include "buf.h"
#include "settings.h"

/* Each reads the list setting `list` of the file at `path` into `c`,
 * replacing what an earlier read left; -1 with the errors (FILE:LINE:
 * what) in `errors`. */
int	dlq_conf_read_targets(struct dlq_config *c, const config_setting_t *list,
	    const char *path, struct dlq_buf *errors);
int	dlq_conf_read_rules(struct dlq_config *c, const config_setting_t *list,
	    const char *path, struct dlq_buf *errors);
int	dlq_conf_read_policies(struct dlq_config *c,
	    const config_setting_t *list, const char *path,
	    struct dlq_buf *errors);

void	dlq_conf_targets_release(struct dlq_target *, size_t n);
void	dlq_conf_rules_release(struct dlq_rule_cfg *, size_t n);
void	dlq_conf_policies_release(struct dlq_replay_policy *, size_t n);

/* The queues a setting (`key`) names, kept to be checked against the
 * topology once it is read: added one by one, dropped when the setting
 * is read again. */
int	dlq_conf_queue_ref_add(struct dlq_config *c, const char *key,
	    const char *name, const char *where);
void	dlq_conf_queue_refs_drop(struct dlq_config *c, const char *key);

#endif
