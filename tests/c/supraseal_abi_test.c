/*
 * supraseal_abi_test: a C program that uses libzkfleet_supraseal_c2.so
 * exactly as a supraseal-c2 caller does, with the types and prototypes of
 * supranational/supra_seal at commit c2ff1acf282dad86812c62f5f431db545d966743:
 *   c2/cuda/groth16_cuda.cu   Assignment<fr_t>, groth16_proof,
 *                             generate_groth16_proofs_c
 *   c2/cuda/groth16_srs.cuh   create_SRS, evict_SRS, drop_SRS, clone_SRS
 *   c2/src/lib.rs             SRS { ptr }, the C++ references as &SRS
 *   sppark util/rusterror.h   RustError { int code; char* message; }
 * The driver (tests/integration/supraseal_abi/supraseal_abi_test.cpp) makes
 * the parameters and assignment files and checks what this writes.
 *
 *   supraseal_abi_test PARAMS OUT ASGN...
 *       proves every assignment file in one generate_groth16_proofs_c call
 *       (circuit i with r = R(i), s = S(i) below) and writes the raw
 *       groth16_proof structs to OUT. Exit 0.
 * With SUPRASEAL_ABI_TEST_LIE=popcount in the environment, the last
 * circuit's a_aux_popcount is off by one; with =bit_len, its b_inp_bit_len.
 * On an error it prints "<function>: code <n>: <message>" and exits 3
 * (create_SRS) or 4 (generate_groth16_proofs_c), after checking that the
 * proofs buffer was left untouched (exit 5 if not). Other failures exit 1.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- supraseal-c2's ABI ---- */

typedef struct RustError {
    int code;
    char* message; /* strdup'ed by the library; the caller frees it */
} RustError;

typedef struct SRS {
    const void* ptr;
} SRS;

typedef struct { uint64_t limb[4]; } fr_t;  /* Montgomery, little-endian limbs */
typedef struct { uint64_t limb[6]; } fp_t;  /* Montgomery, little-endian limbs */
typedef struct { fp_t c0, c1; } fp2_t;
typedef struct { fp_t x, y; } affine_t;
typedef struct { fp2_t x, y; } affine_fp2_t;

typedef struct groth16_proof {
    affine_t a;
    affine_fp2_t b;
    affine_t c;
} groth16_proof;

typedef struct Assignment {
    /* Density of queries */
    const uint64_t* a_aux_density;
    size_t a_aux_bit_len;
    size_t a_aux_popcount;

    const uint64_t* b_inp_density;
    size_t b_inp_bit_len;
    size_t b_inp_popcount;

    const uint64_t* b_aux_density;
    size_t b_aux_bit_len;
    size_t b_aux_popcount;

    /* Evaluations of A, B, C polynomials */
    const fr_t* a;
    const fr_t* b;
    const fr_t* c;
    size_t abc_size;

    /* Assignments of variables */
    const fr_t* inp_assignment_data;
    size_t inp_assignment_size;

    const fr_t* aux_assignment_data;
    size_t aux_assignment_size;
} Assignment;

RustError create_SRS(SRS* ret, const char* srs_path, bool cache);
void evict_SRS(const SRS* ref);
void drop_SRS(const SRS* ref);
SRS clone_SRS(const SRS* rhs);
RustError generate_groth16_proofs_c(const Assignment provers[], size_t num_circuits, const fr_t r_s[],
                                    const fr_t s_s[], groth16_proof proofs[], const SRS* srs);

/* ---- the blinding scalars (the driver uses the same) ---- */

/* Montgomery limbs, far below r (whose top limb is 0x73eda753299d7d48). */
static fr_t R(size_t i) {
    fr_t r = {{0x0123456789abcdefULL + i, 0x1111111111111111ULL, 0x2222222222222222ULL, 0x0333333333333333ULL}};
    return r;
}
static fr_t S(size_t i) {
    fr_t s = {{0x0fedcba987654321ULL + 7 * i, 0x4444444444444444ULL, 0x5555555555555555ULL, 0x0666666666666666ULL}};
    return s;
}

/* ---- assignment files (gpu/zkfleet/bellman/assignment_file.hpp) ---- */

typedef struct {
    uint64_t* words; /* the whole file, 8-byte aligned */
    Assignment view;
} LoadedAssignment;

static size_t popcount_bits(const uint64_t* words, uint64_t bits) {
    size_t n = 0;
    for (uint64_t i = 0; i < bits; ++i) n += (words[i / 64] >> (i % 64)) & 1;
    return n;
}

/* Reads an assignment file into memory and points an Assignment into it.
 * The file was written by the driver; only its size is checked here. */
static int load_assignment(const char* path, LoadedAssignment* out) {
    FILE* f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 0;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    out->words = calloc((size_t)size / 8 + 1, 8);
    if (!out->words || fread(out->words, 1, (size_t)size, f) != (size_t)size || size < 40 ||
        memcmp(out->words, "ZKFASGN1", 8) != 0) {
        fprintf(stderr, "cannot read %s\n", path);
        fclose(f);
        return 0;
    }
    fclose(f);
    const uint64_t abc = out->words[2], n_in = out->words[3], n_aux = out->words[4];
    const uint64_t aux_words = (n_aux + 63) / 64, in_words = (n_in + 63) / 64;
    const uint64_t* p = out->words + 5;
    Assignment* v = &out->view;
    v->a_aux_density = p;
    v->a_aux_bit_len = n_aux;
    v->a_aux_popcount = popcount_bits(p, n_aux);
    p += aux_words;
    v->b_inp_density = p;
    v->b_inp_bit_len = n_in;
    v->b_inp_popcount = popcount_bits(p, n_in);
    p += in_words;
    v->b_aux_density = p;
    v->b_aux_bit_len = n_aux;
    v->b_aux_popcount = popcount_bits(p, n_aux);
    p += aux_words;
    v->a = (const fr_t*)p;
    v->b = v->a + abc;
    v->c = v->b + abc;
    v->abc_size = abc;
    v->inp_assignment_data = v->c + abc;
    v->inp_assignment_size = n_in;
    v->aux_assignment_data = v->inp_assignment_data + n_in;
    v->aux_assignment_size = n_aux;
    if ((const uint64_t*)(v->aux_assignment_data + n_aux) != out->words + size / 8) {
        fprintf(stderr, "%s: its size does not match its counts\n", path);
        return 0;
    }
    return 1;
}

static int report(const char* function, RustError err, int exit_code) {
    printf("%s: code %d: %s\n", function, err.code, err.message ? err.message : "(no message)");
    free(err.message); /* sppark's convention: the caller frees the message */
    return exit_code;
}

int main(int argc, char** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s PARAMS OUT ASGN...\n", argv[0]);
        return 1;
    }
    const size_t n = (size_t)argc - 3;
    LoadedAssignment* loaded = calloc(n, sizeof(LoadedAssignment));
    Assignment* provers = calloc(n, sizeof(Assignment));
    fr_t* r_s = calloc(n, sizeof(fr_t));
    fr_t* s_s = calloc(n, sizeof(fr_t));
    groth16_proof* proofs = malloc(n * sizeof(groth16_proof));
    if (!loaded || !provers || !r_s || !s_s || !proofs) return 1;
    for (size_t i = 0; i < n; ++i) {
        if (!load_assignment(argv[3 + i], &loaded[i])) return 1;
        provers[i] = loaded[i].view;
        r_s[i] = R(i);
        s_s[i] = S(i);
    }
    const char* lie = getenv("SUPRASEAL_ABI_TEST_LIE");
    if (lie && strcmp(lie, "popcount") == 0) provers[n - 1].a_aux_popcount += 1;
    if (lie && strcmp(lie, "bit_len") == 0) provers[n - 1].b_inp_bit_len += 1;
    memset(proofs, 0xab, n * sizeof(groth16_proof));

    /* As the Rust side does: a default (null) SRS filled by create_SRS; a
     * cached one cloned, the original dropped, the clone proving. */
    int rc = 0;
    SRS srs = {NULL};
    RustError err = create_SRS(&srs, argv[1], true);
    if (err.code != 0) {
        rc = report("create_SRS", err, 3);
        goto done;
    }
    if (srs.ptr == NULL || err.message != NULL) {
        fprintf(stderr, "create_SRS succeeded without a handle, or with a message\n");
        rc = 1;
        goto done;
    }
    SRS clone = clone_SRS(&srs);
    drop_SRS(&srs);
    srs.ptr = NULL;
    evict_SRS(&clone); /* the clone still holds the parameters */

    err = generate_groth16_proofs_c(provers, n, r_s, s_s, proofs, &clone);
    drop_SRS(&clone);
    if (err.code != 0) {
        rc = report("generate_groth16_proofs_c", err, 4);
        for (size_t i = 0; i < n * sizeof(groth16_proof); ++i) {
            if (((const unsigned char*)proofs)[i] != 0xab) {
                printf("proofs were written although the call failed (byte %zu)\n", i);
                rc = 5;
                break;
            }
        }
        goto done;
    }
    FILE* out = fopen(argv[2], "wb");
    if (!out || fwrite(proofs, sizeof(groth16_proof), n, out) != n || fclose(out) != 0) {
        fprintf(stderr, "cannot write %s\n", argv[2]);
        rc = 1;
        goto done;
    }
    printf("wrote %zu proofs (%zu bytes each) to %s\n", n, sizeof(groth16_proof), argv[2]);
done:
    for (size_t i = 0; i < n; ++i) free(loaded[i].words);
    free(loaded);
    free(provers);
    free(r_s);
    free(s_s);
    free(proofs);
    return rc;
}
