/* The tree-sparse M = L^T D L of (2.23), hand-written and the same for every model: L unit lower
   triangular with the sparsity of the tree, eliminated from the last coordinate to the first
   (`lam` gives each coordinate's predecessor towards the root, -1 at the root). Factored in place
   in a row-major n x n array: L_kj below the diagonal, 1/d_k on it. Included by
   dynamica_constraints.h (the closed loops' M) and numeric_core.h (the numeric recursions). */
#ifndef DYNAMICA_TREE_LDL_H
#define DYNAMICA_TREE_LDL_H

/* Eliminate pivot k: 1/d_k on the diagonal, L_ki in row k, and the rows of its ancestors i get
   M_ij -= L_ki W_kj with W_kj = d_k L_kj (j on the path from i; still unscaled in row k). */
static void dyn_tree_ldl_pivot(const int *lam, int n, double *M, int k)
{
    double *Mk = M + (size_t)k * n;
    const double dinv = 1.0 / Mk[k];
    Mk[k] = dinv;
    for (int i = lam[k]; i >= 0; i = lam[i]) {
        double *Mi = M + (size_t)i * n;
        const double w = Mk[i], l = w * dinv;
        Mk[i] = l;
        Mi[i] -= l * w;
        for (int j = lam[i]; j >= 0; j = lam[j])
            Mi[j] -= l * Mk[j];
    }
}

/* x = M^-1 x with the factors LD (L^T y = x (2.8), then L x = D^-1 y (2.9)) */
static void dyn_tree_ldl_solve(const int *lam, int n, const double *LD, double *x)
{
    for (int i = n - 1; i >= 0; --i) {
        const double *Li = LD + (size_t)i * n;
        for (int j = lam[i]; j >= 0; j = lam[j])
            x[j] -= Li[j] * x[i];
    }
    for (int i = 0; i < n; ++i) {
        const double *Li = LD + (size_t)i * n;
        x[i] *= Li[i];
        for (int j = lam[i]; j >= 0; j = lam[j])
            x[i] -= Li[j] * x[j];
    }
}
#endif
