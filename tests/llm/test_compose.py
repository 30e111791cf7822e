from collections import defaultdict

import numpy as np
import pytest
import torch

from geode.llm.compose import (
    ComposeModel,
    FusionCrossAttention,
    SimpleGNN,
    batch_graphs,
    claim_pool,
    generate_universe,
    info_nce,
    mean_reciprocal_rank,
    oracle_claim,
    recall_at_k,
)


def _graphs(seed=0, b=3, dp=8, df=6):
    g = torch.Generator().manual_seed(seed)
    paper = batch_graphs(
        [torch.randn(4, dp, generator=g), torch.randn(2, dp, generator=g), torch.randn(3, dp, generator=g)][:b],
        [[(0, 1), (0, 2), (1, 3)], [(0, 1)], [(0, 1), (1, 2)]][:b],
    )
    formal = batch_graphs(
        [torch.randn(3, df, generator=g), torch.randn(1, df, generator=g), torch.randn(2, df, generator=g)][:b],
        [[(0, 1), (1, 2)], [], [(0, 1)]][:b],
    )
    return paper, formal


def _tokens(b=3, v=12, t=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    tok = torch.randint(3, v, (b, t), generator=g)
    tok[:, 0] = 1
    return tok


# ---------------------------------------------------------------- zero initialisation


def test_zero_init_cross_attention_equals_decoder_alone():
    torch.manual_seed(0)
    m = ComposeModel(8, 6, 12, formal_struct_dim=10, fusion_heads=4).eval()
    paper, formal = _graphs()
    tok = _tokens()
    alone = m.decoder(tok)  # no context at all
    assert torch.equal(m(tok, paper, formal), alone)
    # after the gates move, the graphs do change the output
    for layer in m.decoder.layers:
        layer.gate.data.fill_(0.5)
    assert not torch.allclose(m(tok, paper, formal), alone, atol=1e-4)


def test_zero_init_fusion_is_neutral_then_mixes():
    torch.manual_seed(0)
    f = FusionCrossAttention(16, 4)
    p, t = torch.randn(2, 3, 16), torch.randn(2, 5, 16)
    pm, tm = torch.ones(2, 3, dtype=torch.bool), torch.ones(2, 5, dtype=torch.bool)
    p1, t1 = f(p, t, pm, tm)
    p2, t2 = f(p, t + torch.randn(2, 5, 16), pm, tm)
    assert torch.allclose(p1, torch.nn.functional.layer_norm(p, (16,)), atol=1e-5)
    assert torch.equal(p1, p2)  # papers do not see theorems at initialisation
    torch.nn.init.normal_(f.o_paper.weight)
    p3, _ = f(p, t, pm, tm)
    p4, _ = f(p, t + torch.randn(2, 5, 16), pm, tm)
    assert not torch.allclose(p3, p4)


def test_no_fusion_equals_fusion_at_init():
    torch.manual_seed(0)
    a = ComposeModel(8, 6, 12, formal_struct_dim=10, fusion_heads=4, graph_dropout=0.0)
    torch.manual_seed(0)
    b = ComposeModel(8, 6, 12, formal_struct_dim=10, fusion_heads=4, graph_dropout=0.0, fusion=False)
    b.load_state_dict({k: v for k, v in a.state_dict().items() if not k.startswith("fusion.")})
    paper, formal = _graphs()
    ea, eb = a.encode(paper, formal), b.encode(paper, formal)
    # fusion at init is LayerNorm of each side; the concatenation is the raw side
    ln = torch.nn.functional.layer_norm(eb["ctx"], (a.fused_dim,)) * eb["mask"].unsqueeze(-1)
    assert torch.allclose(ea["ctx"], ln, atol=1e-5)


# ---------------------------------------------------------------- GNN


def test_gnn_permutation_equivariance():
    torch.manual_seed(0)
    gnn = SimpleGNN(5, 7, num_layers=3)
    x = torch.randn(1, 6, 5)
    adj = (torch.rand(1, 6, 6) < 0.4).float()
    perm = torch.randperm(6)
    out = gnn(x, adj)
    out_p = gnn(x[:, perm], adj[:, perm][:, :, perm])
    assert torch.allclose(out[:, perm], out_p, atol=1e-5)


def test_gnn_in_out_aggregation_and_padding():
    torch.manual_seed(0)
    gnn = SimpleGNN(4, 3, num_layers=1)
    x = torch.randn(1, 4, 4)
    adj = torch.zeros(1, 4, 4)
    adj[0, 0, 1] = adj[0, 0, 2] = adj[0, 3, 0] = 1.0  # node 0 cites 1 and 2 and is cited by 3
    # the release sums the separately normalised out- and in-means with one transform: reversing every edge
    # leaves the output unchanged, and node 0 sees mean(h1, h2) + h3, not the undirected mean of the three
    assert torch.allclose(gnn(x, adj), gnn(x, adj.transpose(1, 2)), atol=1e-6)
    h = x[0]
    m0 = (h[1] + h[2]) / 2 + h[3]
    h_new = torch.relu(gnn.msg[0](m0))
    g = torch.sigmoid(gnn.gate[0](torch.cat([h[0], h_new])))
    want = gnn.out(gnn.norms[0](g * h_new + (1 - g) * h[0]))
    assert torch.allclose(gnn(x, adj)[0, 0], want, atol=1e-5)
    mask = torch.tensor([[True, True, True, False]])
    assert torch.equal(gnn(x, adj, mask)[0, 3], torch.zeros(3))


def test_padding_does_not_change_a_graph():
    torch.manual_seed(0)
    m = ComposeModel(8, 6, 12, formal_struct_dim=10, fusion_heads=4).eval()
    for layer in m.decoder.layers:
        layer.gate.data.fill_(0.7)
    paper, formal = _graphs()
    tok = _tokens()
    full = m(tok, paper, formal)[1]
    p1, f1 = _graphs(b=3)
    single_p = batch_graphs([p1.x[1, :2]], [[(0, 1)]])
    single_f = batch_graphs([f1.x[1, :1]], [[]])
    assert torch.allclose(m(tok[1:2], single_p, single_f)[0], full, atol=1e-5)


# ---------------------------------------------------------------- universe ground truth


@pytest.fixture(scope="module")
def uni():
    return generate_universe(seed=3)


def test_universe_claim_is_determined_by_both_graphs(uni):
    assert len(uni.anchors) > 100
    assert all(oracle_claim(uni, a) == a.claim for a in uni.anchors)


def test_universe_claim_is_not_determined_by_either_graph_alone(uni):
    # the citation graph fixes (topic, step) and thus the next concept, but not the theorem
    by_cell = defaultdict(set)
    by_seed = defaultdict(set)
    by_concept = defaultdict(set)
    for a in uni.anchors:
        p = a.paper
        by_cell[(int(uni.paper_topic[p]), int(uni.paper_step[p]))].add(tuple(a.claim.split()[3:]))
        by_seed[a.formal_nodes[0]].add(a.next_concept)
        by_concept[int(uni.paper_concept[p])].add(a.next_concept)
        assert a.claim.split()[1] == uni.concepts[a.next_concept]
    assert all(len(v) >= 2 for v in by_cell.values())  # several theorems per citation context
    assert np.mean([len(v) >= 2 for k, v in by_seed.items()]) > 0.5  # several next concepts per formal graph
    assert any(len(v) >= 2 for v in by_concept.values())  # the anchor's own concept is ambiguous


def test_universe_graphs_are_well_formed_and_deterministic(uni):
    again = generate_universe(seed=3)
    assert [a.claim for a in again.anchors] == [a.claim for a in uni.anchors]
    for a in uni.anchors[:50]:
        assert a.paper_edges.min() >= 0 and a.paper_edges.max() < len(a.paper_nodes)
        assert a.formal_edges.size == 0 or a.formal_edges.max() < len(a.formal_nodes)
        assert (a.formal_edges[:, 0] == 0).any() or len(a.formal_nodes) == 1


def test_claim_pool_has_hard_negatives(uni):
    pool, truth = claim_pool(uni, uni.anchors[:20], hard=5, seed=0)
    assert len(set(pool)) == len(pool)
    for a, t in zip(uni.anchors[:20], truth):
        assert pool[t] == a.claim
        words = a.claim.split()
        assert sum(p.split()[3:] == words[3:] for p in pool) >= 6  # same theorem, other concepts
        assert sum(p.split()[1] == words[1] for p in pool) >= 6  # same concept, other theorems


# ---------------------------------------------------------------- retrieval metrics


def test_recall_and_mrr_on_hand_made_rankings():
    s = np.array([[0.9, 0.5, 0.1, 0.3], [0.2, 0.2, 0.9, 0.2], [0.4, 0.4, 0.4, 0.4]])
    truth = np.array([1, 0, 3])
    # ranks: query 0 -> 2; query 1 -> tie of three at ranks 2..4; query 2 -> tie of four at ranks 1..4
    assert recall_at_k(s, truth, 1) == pytest.approx((0 + 0 + 0.25) / 3)
    assert recall_at_k(s, truth, 2) == pytest.approx((1 + 1 / 3 + 0.5) / 3)
    assert recall_at_k(s, truth, 4) == pytest.approx(1.0)
    rr = [1 / 2, np.mean([1 / 2, 1 / 3, 1 / 4]), np.mean([1, 1 / 2, 1 / 3, 1 / 4])]
    assert mean_reciprocal_rank(s, truth) == pytest.approx(np.mean(rr))


def test_info_nce_perfect_and_wrong_pairs():
    a = torch.eye(6)
    assert float(info_nce(a, a, tau=0.05)) < 1e-3
    assert float(info_nce(a, a.roll(1, 0), tau=0.05)) > 5
    assert float(info_nce(a, a, tau=0.05, negatives=a)) == pytest.approx(np.log(2), abs=1e-3)


# ---------------------------------------------------------------- training signal


def test_loss_stages_and_gradients():
    torch.manual_seed(0)
    m = ComposeModel(8, 6, 12, formal_struct_dim=10, fusion_heads=4, claim_dim=5, bank_size=4)
    paper, formal = _graphs()
    tok = _tokens()
    loss, parts = m.loss(tok, paper, formal, stage=2)
    loss.backward()
    assert {"ce", "contrastive", "cross", "total"} <= set(parts)
    assert m.decoder.layers[0].gate.grad.abs() > 0  # the zero gate still learns
    assert int(m.mem_count) == 3
    m.zero_grad()
    loss1, parts1 = m.loss(tok, paper, formal, stage=1, claim_target=torch.randn(3, 5))
    loss1.backward()
    assert m.decoder.tok.weight.grad is None  # stage 1 leaves the decoder alone
    assert m.paper_encoder.gnn.out.weight.grad.abs().sum() > 0


def test_a_few_steps_fit_a_copy_task():
    torch.manual_seed(0)
    m = ComposeModel(8, 6, 12, use_paper=False, formal_struct_dim=10, fusion_heads=4, graph_dropout=0.0)
    g = torch.Generator().manual_seed(1)
    feats = torch.eye(6)[torch.randint(0, 6, (32,), generator=g)]
    formal = batch_graphs([f[None] for f in feats], [[] for _ in range(32)])
    tok = torch.stack([torch.tensor([1, 3 + int(f.argmax()), 2]) for f in feats])
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    for _ in range(80):
        loss, _ = m.loss(tok, None, formal)
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    out = m.generate(None, formal, bos=1, eos=2, max_new=2)
    assert (out[:, 0] == tok[:, 1]).float().mean() > 0.9


# ---------------------------------------------------------------- bad input


def test_bad_graphs_give_clear_errors():
    x = np.ones((3, 4))
    with pytest.raises(ValueError, match="out of range"):
        batch_graphs([x], [[(0, 3)]])
    with pytest.raises(ValueError, match="out of range"):
        batch_graphs([x], [[(-1, 0)]])
    with pytest.raises(ValueError, match="non-empty"):
        batch_graphs([np.zeros((0, 4))], [[]])
    with pytest.raises(ValueError, match="non-empty list"):
        batch_graphs([], [])
    with pytest.raises(ValueError, match="same width"):
        batch_graphs([x, np.ones((2, 5))], [[], []])
    with pytest.raises(ValueError, match="roots"):
        batch_graphs([x], [[]], roots=[5])
    with pytest.raises(ValueError, match="edges"):
        batch_graphs([x, x], [[]])


def test_bad_model_inputs_give_clear_errors():
    m = ComposeModel(8, 6, 12, formal_struct_dim=10, fusion_heads=4)
    paper, formal = _graphs()
    with pytest.raises(ValueError, match="formal must be given"):
        m(_tokens(), paper, None)
    with pytest.raises(ValueError, match=r"paper.x must have shape"):
        m(_tokens(), formal, formal)
    with pytest.raises(ValueError, match="tokens must lie"):
        m(torch.full((3, 4), 99), paper, formal)
    with pytest.raises(ValueError, match="both be False"):
        ComposeModel(8, 6, 12, use_paper=False, use_formal=False)
    with pytest.raises(ValueError, match="stage"):
        m.loss(_tokens(), paper, formal, stage=3)
    with pytest.raises(ValueError, match="k must be"):
        recall_at_k([[0.1, 0.2]], [0], 0)
    with pytest.raises(ValueError, match="truth"):
        recall_at_k([[0.1, 0.2]], [2], 1)
    with pytest.raises(ValueError, match="n_theorems"):
        generate_universe(n_symbols=4, n_theorems=10)
