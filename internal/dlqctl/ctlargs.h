/* ctlargs.h - dlqctl's command words. argv[0] is the command's name
 * ("replay", "redrive resume"); the parse leaves optind at the first
 * word that is not an option. Each function says on stderr what is
 * wrong when it returns false. */
#ifndef DLQ_CTLARGS_H
#define DLQ_CTLARGS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

/* Parses the command's options into request `r` (--since into
 * "since_ms", --limit into "limit", ...), accepting only the names in
 * `allowed` (space separated). */
bool	dlq_args_options(cJSON *r, int argc, char **argv, const char *allowed);
/* Whether `r` holds every option named in `names` (space separated). */
bool	dlq_args_require(const cJSON *r, const char *cmd, const char *names);
/* The words from optind as archive ids into the array "ids" of `r`, in
 * their order, each once. At least one, at most DLQ_CONTROL_IDS_MAX. */
bool	dlq_args_ids(cJSON *r, int argc, char **argv);
/* Whether there is a word at argv[at]; else: the command needs `what`. */
bool	dlq_args_has(int at, int argc, char **argv, const char *what);
/* Whether no word is left from argv[from]; else names the first. */
bool	dlq_args_done(int from, int argc, char **argv);
/* A string member of `r`, or NULL. */
const char *dlq_args_str(cJSON *r, const char *k);
/* Takes --json out of a command's words (setting *json) and says whether
 * --help or -h is among them: only where an option stands, not as an
 * option's value nor after "--". */
bool	dlq_args_take_global(int *argc, char **argv, bool *json);

#endif
