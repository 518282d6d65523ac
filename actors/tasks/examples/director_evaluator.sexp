;; Director-Evaluator (seed 001, Pattern:DirectorEvaluator:1.1), written in the DSL itself.
;;
;; The director task writes a draft for `goal`; the evaluator task accepts it or says what
;; to improve; the director writes again with that feedback, until the evaluator accepts or
;; `max_rounds` drafts have been judged (then the workflow FAILS, with the last feedback).
;;
;;   chorus task --file actors/tasks/examples/director_evaluator.sexp \
;;       --param goal="a two-line poem about event logs" --param max_rounds=3
;;
;; director and evaluator are the atomic task templates in actors/tasks/templates/; give
;; your own with --templates DIR (same names) to change what they say.

(bind limit (if (defined? max_rounds) (int max_rounds) 3))

(defn refine (feedback round)
  (let ((draft (call director :goal goal :feedback feedback)))
    (if (not (ok? draft))
        draft
        (let ((verdict (call evaluator :goal goal :draft (get draft :content))))
          (cond ((not (ok? verdict)) verdict)
                ((= (get verdict :content :accepted) true)
                 (result (dict :draft (get draft :content)
                               :rounds round
                               :feedback (get verdict :content :feedback))))
                ((>= round limit)
                 (fail "not_accepted"
                       (str "no draft accepted after " round " round(s); last feedback: "
                            (get verdict :content :feedback))))
                (else (refine (get verdict :content :feedback) (+ round 1))))))))

(refine "none yet" 1)
