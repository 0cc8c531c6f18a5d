/* Test driver of templates/native/dynamica_linalg.h's solves (tests/generator/render/test_linalg_header.py): reads cases from
   stdin as whitespace-separated numbers
       kind n nrhs sign   F (n*n, row-major)   B (n*nrhs, row-major)   (piv, n ints, for kind 0)
   kind 0: dyn_lu_solve with F = the LU of dyn_lu and its pivots; kind 1: dyn_ldl_solve;
   kind 2: dyn_lu on F, then dyn_lu_solve; and writes each solution B as one line (%.17g). */
#include <stdio.h>
#include <stdlib.h>
#include "dynamica_linalg.h"

int main(void)
{
    int kind, n, nrhs;
    double sign;
    while (scanf("%d %d %d %lf", &kind, &n, &nrhs, &sign) == 4) {
        double *F = malloc(((size_t)n * n + 1) * sizeof(double)), *B = malloc(((size_t)n * nrhs + 1) * sizeof(double));
        int *piv = malloc(((size_t)n + 1) * sizeof(int));
        for (int k = 0; k < n * n; ++k)
            if (scanf("%lf", &F[k]) != 1)
                return 2;
        for (int k = 0; k < n * nrhs; ++k)
            if (scanf("%lf", &B[k]) != 1)
                return 2;
        if (kind == 0)
            for (int k = 0; k < n; ++k)
                if (scanf("%d", &piv[k]) != 1)
                    return 2;
        if (kind == 1)
            dyn_ldl_solve(n, F, nrhs, B, sign);
        else {
            if (kind == 2 && dyn_lu(n, F, piv) != 0)
                return 3;
            dyn_lu_solve(n, F, piv, nrhs, B);
        }
        for (int k = 0; k < n * nrhs; ++k)
            printf("%.17g%c", B[k], k + 1 < n * nrhs ? ' ' : '\n');
        if (n * nrhs == 0)
            printf("\n");
        free(F);
        free(B);
        free(piv);
    }
    return 0;
}
