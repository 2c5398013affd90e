/*
 * tests/list_algorithms.c - print every engine's algorithm names from the
 * registry (lib/engines/engines.c), one engine a line: "swap radixk shift
 * ring". tests/check_names.sh checks the documentation's lists against it.
 */
#include <stdio.h>

#include "core/registry.h"

int main(void)
{
  for (int e = 0; e < bpc__nengines; e++) {
    const bpc__engine_t *en = bpc__engines[e];
    printf("%s", en->name);
    for (int i = 0; i < en->nrows; i++)
      printf(" %s", en->rows[i].info.name);
    printf("\n");
  }
  return 0;
}
