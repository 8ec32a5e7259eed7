// cfrac/espresso-style storm of small objects in one thread: big numbers kept as linked lists of
// 32-bit limbs (one 16-byte node each, a fresh list for every result, as cfrac's bignums), and
// binary trees of small records with small payloads built and torn down (as espresso's cubes).
// Almost every allocation is 16-64 bytes and short-lived.
//
// A fixed amount of work; prints only numbers that depend on nothing but the arguments.
// Usage: workload_small_objects [iterations=400]
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace {

void* checked_malloc(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) {
        std::fputs("small_objects: out of memory\n", stderr);
        std::exit(1);
    }
    return block;
}

// --- big numbers: least significant limb first -------------------------------------------------

struct Limb {
    std::uint32_t value;
    Limb* next;
};

Limb* new_limb(std::uint32_t value) {
    auto* limb = static_cast<Limb*>(checked_malloc(sizeof(Limb)));
    limb->value = value;
    limb->next = nullptr;
    return limb;
}

void free_number(Limb* number) {
    while (number != nullptr) {
        Limb* next = number->next;
        std::free(number);
        number = next;
    }
}

Limb* add(const Limb* a, const Limb* b) {
    Limb* head = nullptr;
    Limb** tail = &head;
    std::uint64_t carry = 0;
    while (a != nullptr || b != nullptr || carry != 0) {
        std::uint64_t sum = carry;
        if (a != nullptr) sum += a->value, a = a->next;
        if (b != nullptr) sum += b->value, b = b->next;
        *tail = new_limb(static_cast<std::uint32_t>(sum));
        tail = &(*tail)->next;
        carry = sum >> 32;
    }
    return head;
}

Limb* multiply_small(const Limb* a, std::uint32_t factor) {
    Limb* head = nullptr;
    Limb** tail = &head;
    std::uint64_t carry = 0;
    while (a != nullptr || carry != 0) {
        std::uint64_t product = carry;
        if (a != nullptr) product += static_cast<std::uint64_t>(a->value) * factor, a = a->next;
        *tail = new_limb(static_cast<std::uint32_t>(product));
        tail = &(*tail)->next;
        carry = product >> 32;
    }
    return head;
}

std::uint64_t digest(const Limb* number) {
    std::uint64_t hash = 1469598103934665603ull;
    for (; number != nullptr; number = number->next) hash = (hash ^ number->value) * 1099511628211ull;
    return hash;
}

std::uint64_t fibonacci_digest(int n) {
    Limb* previous = new_limb(0);
    Limb* current = new_limb(1);
    for (int i = 1; i < n; ++i) {
        Limb* next = add(previous, current);
        free_number(previous);
        previous = current;
        current = next;
    }
    const std::uint64_t result = digest(current);
    free_number(previous);
    free_number(current);
    return result;
}

std::uint64_t factorial_digest(std::uint32_t n) {
    Limb* product = new_limb(1);
    for (std::uint32_t factor = 2; factor <= n; ++factor) {
        Limb* next = multiply_small(product, factor);
        free_number(product);
        product = next;
    }
    const std::uint64_t result = digest(product);
    free_number(product);
    return result;
}

// --- trees of small records with small payloads ------------------------------------------------

struct Record {
    std::uint64_t key;
    Record* left;
    Record* right;
    char* name;  // 8-48 bytes
};

Record* insert(Record* root, std::uint64_t key, std::mt19937_64& random) {
    Record** link = &root;
    while (*link != nullptr) link = key < (*link)->key ? &(*link)->left : &(*link)->right;
    auto* record = static_cast<Record*>(checked_malloc(sizeof(Record)));
    const std::size_t name_size = 8 + random() % 41;
    record->key = key;
    record->left = record->right = nullptr;
    record->name = static_cast<char*>(checked_malloc(name_size));
    std::memset(record->name, 'a' + static_cast<int>(key % 26), name_size - 1);
    record->name[name_size - 1] = '\0';
    *link = record;
    return root;
}

std::uint64_t tear_down(Record* record) {
    if (record == nullptr) return 0;
    const std::uint64_t sum =
        tear_down(record->left) + tear_down(record->right) + record->key + std::strlen(record->name);
    std::free(record->name);
    std::free(record);
    return sum;
}

std::uint64_t tree_digest(std::uint64_t seed, int records) {
    std::mt19937_64 random(seed);
    Record* root = nullptr;
    for (int i = 0; i < records; ++i) root = insert(root, random() % 1'000'000, random);
    return tear_down(root);
}

}  // namespace

int main(int argc, char** argv) {
    const int iterations = argc > 1 ? std::stoi(argv[1]) : 400;
    if (iterations < 1) {
        std::fputs("usage: workload_small_objects [iterations >= 1]\n", stderr);
        return 2;
    }
    std::uint64_t checksum = 0;
    for (int i = 0; i < iterations; ++i) {
        checksum ^= fibonacci_digest(1200 + i % 7) + factorial_digest(250 + static_cast<std::uint32_t>(i % 5));
        checksum += tree_digest(static_cast<std::uint64_t>(i), 3000);
    }
    std::printf("small_objects: %d iterations, checksum %016llx\n", iterations,
                static_cast<unsigned long long>(checksum));
}
