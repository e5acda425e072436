// -O0 a parameter named n that points to a struct; member access through it.
struct node {
  int id;
  short weight;
  char tag;
  struct node *next;
};

struct node nodes[3] = {{1, 10, 'a', 0}, {2, 20, 'b', 0}, {3, 30, 'c', 0}};

int visit(struct node *n, int depth) {
  int w = n->weight * depth;
  if (n->next)
    w += visit(n->next, depth + 1);
  return w;
}

int test_main(void) {
  nodes[0].next = &nodes[1];
  nodes[1].next = &nodes[2];
  int total = visit(&nodes[0], 1);
  return total & 63;
}
